"""Cost of `firstfault diagnose` against the number of ranks at a fixed total size (issue 23: linear in ranks).

    python -m bench.sweep                                  # 512 ... 131,072 ranks, 200 MB each
    python -m bench.sweep --ranks 512,2048,8192 --size 100MB --timeout 120

Each point is a tree bench.generate writes (``--compact``: 131,072 ranks fit in 200 MB; ``--survivors all``
by default: every survivor names the dead rank's address, the case that asked which ranks live on a host once per
rank), kept under bench/out/sweep/ and reused. bench/stages.py times diagnose's stages in a child process (start-up,
scan, correlate, render), bench/child.py samples the PSS of its process tree, and the diagnosis is checked against
the planted one (truth.json: the victim rank, and its failure's class). Per stage, the log-log slope of seconds
against ranks is fitted: 1 is linear in ranks, 2 quadratic; at a fixed size scanning should stay near 0.
ripgrep (`rg -c -f` with the matcher's patterns, bench/rg.py) on the same tree is the baseline in the same run.
Markdown on stdout, everything in bench/out/sweep.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.child import ROOT, compiled_bytecode, run_child
from bench.generate import SURVIVORS, generate, human, parse_size
from bench.rg import export_patterns, rg_path, run_rg
from bench.timing import log

OUT = Path(__file__).resolve().parent / "out"
DEFAULT_RANKS = (512, 2048, 8192, 32768, 131072)
STAGES = ("startup", "scan", "correlate", "render")
PSS_TARGET_MB = 300  # issue 23: the whole process tree's peak PSS at every point, 131,072 ranks included


def dataset(ranks: int, size: int, seed: int, failure: str, survivors: str) -> tuple[Path, dict[str, Any]]:
    root = OUT / "sweep" / f"r{ranks}-{size // 10**6}MB-s{seed}-{failure}-{survivors}"
    truth_path = root / "truth.json"
    if truth_path.exists():
        return root, json.loads(truth_path.read_text())
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)  # a tree whose writing was interrupted
    log(f"generating {ranks} ranks, {human(size)} under {root}")
    truth = generate(root, ranks, size, seed, failure, jobs=2, quiet=True, compact=True, survivors=survivors)
    log(f"  {human(float(str(truth['bytes'])))} in {truth['files']} files, {truth['generate_seconds']} s")
    return root, truth


def diagnose_point(logs: Path, jobs: int | None, timeout: float, code: Path | None) -> dict[str, Any]:
    cmd = ["timeout", str(timeout), sys.executable, "-m", "bench.stages", str(logs)]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    t0 = time.perf_counter()
    # `-m` puts the working directory first on sys.path: another checkout's code is run from that checkout
    out, usage = run_child(cmd, stdout=subprocess.PIPE, cwd=code or ROOT,
                           env={**os.environ, "PYTHONPATH": str(code)} if code else None)
    wall = time.perf_counter() - t0
    point: dict[str, Any] = {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                             "tree_pss_mb": out["tree_pss_mb"], "processes": out["processes"]}
    if out["rc"] == 124:
        point["timed_out"] = True
    elif out["rc"] != 0:
        raise RuntimeError(f"bench.stages failed ({out['rc']}): {out['stderr'][-800:]}")
    else:
        point.update(json.loads(out["stdout"]))
    return point


def rg_point(rg: str, patterns: Path, logs: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    found = run_rg(rg, patterns, [logs], threads=None)
    return {"wall_s": round(time.perf_counter() - t0, 2), "matched_lines": found["matched_lines"]}


def slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(seconds) against log(ranks): the exponent of a power law through the points."""
    pts = [(math.log(n), math.log(t)) for n, t in points if t > 0]
    if len(pts) < 2:
        return None
    mx, my = statistics.fmean(x for x, _ in pts), statistics.fmean(y for _, y in pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / sxx, 2) if sxx else None


def correct(point: dict[str, Any], truth: dict[str, Any]) -> bool:
    """The planted answer: the victim rank, under an entry of its failure's class (an OOM)."""
    return point.get("rank") == truth["victim"] and str(truth["signature_hint"]) in str(point.get("signature"))


def fits(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    done = [r for r in rows if not r["diagnose"].get("timed_out")]
    out = {stage: slope([(r["ranks"], r["diagnose"][f"{stage}_s"]) for r in done]) for stage in STAGES}
    out["diagnose"] = slope([(r["ranks"], r["diagnose"]["wall_s"]) for r in done])
    out["rg"] = slope([(r["ranks"], r["rg"]["wall_s"]) for r in rows if r.get("rg")])
    out["tree_pss_mb"] = slope([(r["ranks"], r["diagnose"]["tree_pss_mb"]) for r in done])
    return out


def memory(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The points over PSS_TARGET_MB, and the KB of PSS each rank adds between the smallest and the largest
    point that finished (what start-up and the catalog cost cancels out)."""
    done = [r for r in rows if not r["diagnose"].get("timed_out")]
    over = [(r["ranks"], r["diagnose"]["tree_pss_mb"]) for r in rows if r["diagnose"]["tree_pss_mb"] > PSS_TARGET_MB]
    per_rank = None
    if len(done) >= 2 and done[-1]["ranks"] > done[0]["ranks"]:
        grown = done[-1]["diagnose"]["tree_pss_mb"] - done[0]["diagnose"]["tree_pss_mb"]
        per_rank = round(grown * 1000 / (done[-1]["ranks"] - done[0]["ranks"]), 2)
    return {"target_mb": PSS_TARGET_MB, "over": over, "kb_per_rank": per_rank}


def _memory_line(rows: list[dict[str, Any]]) -> str:
    found = memory(rows)
    over = ", ".join(f"{n:,} ranks ({mb:,.0f} MB)" for n, mb in found["over"]) or "none"
    return (f"Memory target: tree PSS <= {found['target_mb']} MB at every point; over it: {over}. "
            f"PSS each added rank costs: {found['kb_per_rank'] if found['kb_per_rank'] is not None else 'n/a'} KB")


def report(rows: list[dict[str, Any]], exponents: dict[str, float | None], args: argparse.Namespace) -> str:
    head = ("| ranks | MB | files | start-up s | scan s | correlate s | render s | diagnose s | rg s | diagnose/rg "
            "| tree PSS MB | JSON KB | text lines | Slack KB | planted answer |")
    lines = [f"# bench.sweep: {human(args.size)} at every point, seed {args.seed}, {args.failure}, survivors "
             f"{args.survivors}, diagnose --jobs {args.jobs or 'default (pool)'}, code {args.code or ROOT}", "", head,
             "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        d, rg = r["diagnose"], r.get("rg")
        rg_s = f"{rg['wall_s']:.2f}" if rg else "n/a"
        ratio = f"{d['wall_s'] / rg['wall_s']:.1f}x" if rg and rg["wall_s"] > 0 else "n/a"
        if d.get("timed_out"):
            lines.append(f"| {r['ranks']:,} | {r['mb']:.0f} | {r['files']:,} | timed out after {args.timeout:.0f} s "
                         f"| | | | > {d['wall_s']:.0f} | {rg_s} | | {d['tree_pss_mb']:.0f} | | | | |")
            continue
        ok = "yes" if r["correct"] else f"NO ({d.get('rank')} {d.get('signature')})"
        lines.append(f"| {r['ranks']:,} | {r['mb']:.0f} | {r['files']:,} | {d['startup_s']:.2f} | {d['scan_s']:.2f} "
                     f"| {d['correlate_s']:.2f} | {d['render_s']:.2f} | {d['wall_s']:.2f} | {rg_s} | {ratio} "
                     f"| {d['tree_pss_mb']:.0f} | {d['json_bytes'] / 1000:.0f} | {d['text_lines']} "
                     f"| {d['slack_bytes'] / 1000:.1f} | {ok} |")
    shown = ", ".join(f"{k} {v if v is not None else 'n/a'}" for k, v in exponents.items())
    lines += ["", f"Fitted exponent (log-log slope of seconds, or MB, against ranks): {shown}", "", _memory_line(rows),
              ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", default=",".join(map(str, DEFAULT_RANKS)), help="comma-separated world sizes")
    p.add_argument("--size", type=parse_size, default=parse_size("200MB"), help="total size of every point")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--failure", choices=("oom_kill", "cuda_oom"), default="oom_kill")
    p.add_argument("--survivors", choices=SURVIVORS, default="all")
    p.add_argument("--jobs", type=int, default=None, help="diagnose's scanning processes (default: its pool)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a point's diagnose may take")
    p.add_argument("--no-rg", action="store_true", help="skip the ripgrep baseline")
    p.add_argument("--code", type=Path, default=None, help="diagnose with another checkout's code (a git worktree "
                   "of an older commit, with bench/stages.py and catalog/_linescan*.so copied in): the before")
    args = p.parse_args(argv)
    ranks = [int(x) for x in args.ranks.split(",") if x.strip()]
    compiled_bytecode()
    rg = None if args.no_rg else rg_path()
    patterns = OUT / "patterns.rg"
    if rg is None and not args.no_rg:
        log("ripgrep (rg) not found: the rg baseline is skipped. Install it with `apt-get install -y ripgrep`.")
    elif rg is not None:
        from scan.engine import default_matcher

        OUT.mkdir(parents=True, exist_ok=True)
        export_patterns(default_matcher("auto").patterns, rg, patterns)
    rows = []
    for n in ranks:
        root, truth = dataset(n, args.size, args.seed, args.failure, args.survivors)
        log(f"{n} ranks: diagnose")
        d = diagnose_point(root / "logs", args.jobs, args.timeout, args.code)
        row: dict[str, Any] = {"ranks": n, "mb": int(truth["bytes"]) / 1e6, "files": truth["files"], "diagnose": d,
                               "correct": not d.get("timed_out") and correct(d, truth),
                               "truth": {"victim": truth["victim"], "hint": truth["signature_hint"]}}
        if rg is not None:
            row["rg"] = rg_point(rg, patterns, root / "logs")
        log(f"  {json.dumps(row)}")
        rows.append(row)
    exponents = fits(rows)
    (OUT / "sweep.json").write_text(json.dumps({"args": vars(args), "rows": rows, "exponents": exponents,
                                                "memory": memory(rows)},
                                               indent=2, default=str) + "\n")
    sys.stdout.write(report(rows, exponents, args))
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
