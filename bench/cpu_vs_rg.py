"""CPU-seconds of `firstfault diagnose` from two checkouts against `rg -c -f` on the same trees, round by round
(issue 23: speed per rank; a loaded machine stretches wall time, CPU time much less):

    python -m bench.cpu_vs_rg bench/out/sweep/r8192-200MB-s1-oom_kill-all/logs --base /tmp/main --rounds 3

Each round runs, alternated: rg with the matcher's patterns (bench/rg.py; `-j1` with `--jobs 1`), then
`diagnose TREE --format json --year 2026` from ``--base`` and from this checkout (`python -m firstfault.cli` run
in each checkout, so that each imports its own code). CPU is the child's rusage, the pool's workers included.
Reported per tree: the medians, each checkout's CPU over rg's (median of the rounds' ratios), and whether the two
checkouts' JSON was byte-identical in every round (compared by digest, never printed).
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.child import ROOT, compiled_bytecode, run_child
from bench.rg import export_patterns, rg_path, run_rg


def diagnose_cpu(code: Path, tree: Path, jobs: int | None) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "firstfault.cli", "diagnose", str(tree), "--format", "json", "--year", "2026"]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    out, usage = run_child(cmd, stdout=subprocess.PIPE, cwd=code, env={**os.environ, "PYTHONPATH": str(code)})
    if out["rc"] != 0:
        raise RuntimeError(f"diagnose from {code} failed ({out['rc']}): {out['stderr'][-500:]}")
    return usage.ru_utime + usage.ru_stime, hashlib.sha256(out["stdout"].encode()).hexdigest()


def tree_rounds(tree: Path, base: Path, rounds: int, jobs: int | None, rg: str, patterns: Path) -> dict[str, Any]:
    rows: list[dict[str, float]] = []
    same = True
    for _ in range(rounds):
        rg_cpu = float(run_rg(rg, patterns, [tree], threads=jobs)["_child_cpu"])
        base_cpu, base_digest = diagnose_cpu(base, tree, jobs)
        ours_cpu, ours_digest = diagnose_cpu(ROOT, tree, jobs)
        same = same and base_digest == ours_digest
        rows.append({"rg": rg_cpu, "base": base_cpu, "ours": ours_cpu})
    med = {k: round(statistics.median(r[k] for r in rows), 3) for k in ("rg", "base", "ours")}
    return {"tree": str(tree), "cpu_s": med,
            "base_over_rg": round(statistics.median(r["base"] / r["rg"] for r in rows), 2),
            "ours_over_rg": round(statistics.median(r["ours"] / r["rg"] for r in rows), 2),
            "ours_over_base": round(statistics.median(r["ours"] / r["base"] for r in rows), 3),
            "ours_over_base_range": [round(f(r["ours"] / r["base"] for r in rows), 3) for f in (min, max)],
            "json_identical": same, "rounds": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cpu_vs_rg", description=__doc__.split("\n\n")[0])
    p.add_argument("trees", nargs="+", type=Path)
    p.add_argument("--base", type=Path, required=True, help="the other checkout (a git worktree)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--jobs", type=int, default=None, help="diagnose's --jobs, and rg -j (default: both pick)")
    a = p.parse_args(argv)
    rg = rg_path()
    if rg is None:
        p.error("rg is not installed")
    compiled_bytecode()
    for package in ("catalog", "correlator", "config", "firstfault", "ingest", "schemas", "scan", "simulate", "sources",
                    "store", "pipeline", "runtime", "workers", "notifiers", "api"):  # the base's too:
        compileall.compile_dir(a.base / package, quiet=1)  # else each of its runs compiles what it imports
    from scan.engine import default_matcher

    with tempfile.TemporaryDirectory() as tmp:
        patterns = Path(tmp) / "patterns.txt"
        export_patterns(default_matcher().patterns, rg, patterns)
        print("| tree | rg CPU s | base CPU s | this CPU s | base/rg | this/rg | this/base (range) | JSON identical |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for tree in a.trees:
            r = tree_rounds(tree.resolve(), a.base.resolve(), a.rounds, a.jobs, rg, patterns)
            c = r["cpu_s"]
            print(f"| {tree} | {c['rg']} | {c['base']} | {c['ours']} | {r['base_over_rg']}x | {r['ours_over_rg']}x "
                  f"| {r['ours_over_base']} ({r['ours_over_base_range'][0]}-{r['ours_over_base_range'][1]}) "
                  f"| {r['json_identical']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
