"""The open benchmark: every accuracy figure firstfault reports, beside torchrun's rule, in one command.

    .venv/bin/python -m bench.open                       # writes bench/out/open-benchmark.md and .json
    .venv/bin/python -m bench.open --exe /path/to/tool   # your diagnoser, if it prints diagnose's JSON

Rows, each scored by ../shared/corpus/score.py on both diagnosers in the same run:
- the real corpus's tuning and checking halves, and bench/field's, field2's and field3's (real logs collected by
  people who read none of firstfault; their checking halves were never read while tuning);
- bench/independent's, bench/independent4's, 5's, 6's and 7's simulated jobs, seeds 2
  and 3 (generators written apart from firstfault.simulate, from the formats' upstream sources; these seeds are never
  tuned on), scored with a generator's class_map_additions.json beside the corpus's map where it has one;
- firstfault.simulate's seeded sweep (bench.accuracy), plain and with issue 22's hostile knobs: a simulator of
  ours checks our assumptions, not the world's, and is listed last for that reason.

torchrun's rule is `score.py --diagnoser baseline` on the real logs, and bench.accuracy's `baseline_call` on job
directories (bench/independent's, scored against their labels as score.py scores; the rule names no class) and
on the simulator (bench/accuracy.py's docstring says how it reads a log). `--exe` names any program that
answers `PROG diagnose PATH --format json` with firstfault's JSON contract (docs/contracts.md:
`root_cause.signature`, `.rank`, `.host`, `.confidence`); its column replaces firstfault's.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import FIELD_SETS, corpus_dir

OUT = Path(__file__).resolve().parent / "out"
ROOT = Path(__file__).resolve().parents[1]
SETS = (("corpus", "tuning"), ("corpus", "checking"), ("field", "tuning"), ("field", "checking"),
        ("field2", "tuning"), ("field2", "checking"), ("field3", "tuning"), ("field3", "checking"),
        ("field4", "tuning"), ("field4", "checking"), ("field5", "tuning"), ("field5", "checking"),
        ("field6", "tuning"), ("field6", "checking"), ("field7", "tuning"), ("field7", "checking"),
        ("field8", "tuning"), ("field8", "checking"), ("field9", "tuning"), ("field9", "checking"),
        ("field10", "tuning"), ("field10", "checking"))
SEEDS = (2, 3)
# blind generators: held-out rows
GENERATORS = ("bench.independent", "bench.independent4", "bench.independent5", "bench.independent6",
              "bench.independent7")
_SUMMARY = re.compile(r"cases (?P<n>\d+), class (?P<cls>\d+)/\d+ = \d+%, initiating rank (?P<rank>\d+)/(?P<rank_n>\d+)"
                      r" = \d+%, host (?P<host>\d+)/(?P<host_n>\d+) = \d+%, initiating \(firm labels\) "
                      r"(?P<firm>\d+)/(?P<firm_n>\d+), crashes (?P<crashes>\d+)")
_CALIBRATION = re.compile(r"confidence >= 0\.7: (?P<high>\d+)/\d+, of them right \d+, confidently wrong "
                          r"(?P<wrong>\d+) \(at >= 0\.9: (?P<wrong90>\d+)\)")
_OVERALL = re.compile(r"\| \*\*overall\*\* \| (?P<n>\d+) \| (?P<ff>\d+)% \| (?P<base>\d+)% \| (?P<cls>\d+)% \|")


def parse_score(text: str) -> dict[str, int]:
    """score.py's summary line (and its calibration line, for firstfault) as numbers."""
    found = _SUMMARY.search(text)
    if found is None:
        raise RuntimeError(f"score.py printed no summary: {text[-500:]!r}")
    out = {k: int(v) for k, v in found.groupdict().items()}
    if cal := _CALIBRATION.search(text):
        out.update({k: int(v) for k, v in cal.groupdict().items()})
    return out


def _score(labels: Path, diagnoser: str, exe: str, scorer: Path) -> dict[str, int]:
    cmd = [sys.executable, str(scorer), str(labels), "--diagnoser", diagnoser, "--exe", exe]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return parse_score(done.stdout)


def _corpus_rows(which: str, half: str, exe: str) -> tuple[dict[str, int], dict[str, int]]:
    """(firstfault or --exe, baseline) on one half of one set, through bench.corpus's own selection."""
    results = []
    for diagnoser in ("firstfault", "baseline"):
        cmd = [sys.executable, "-m", "bench.corpus", "--set", which, "--half", half, "--diagnoser", diagnoser,
               "--exe", exe]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
        results.append(parse_score(done.stdout))
    return results[0], results[1]


def _independent_rows(seed: int, exe: str, scorer: Path, tmp: Path,
                      module: str = "bench.independent") -> tuple[dict[str, int], dict[str, int]]:
    out = tmp / f"{module.rsplit('.', 1)[-1]}-seed{seed}"
    subprocess.run([sys.executable, "-m", f"{module}.generate", str(out), "--seed", str(seed), "--jobs", "60"],
                   capture_output=True, cwd=ROOT, check=True)
    return _score(out / "labels.jsonl", "firstfault", exe, scorer), directory_baseline(out / "labels.jsonl")


def generator_scorer(module: str, corpus: Path, tmp: Path) -> Path:
    """score.py beside a class map that knows a generator's own classes (its class_map_additions.json, as
    bench.corpus merges a field set's), else the corpus's score.py as it is: without them a class the corpus map
    lacks is scored by score.py's all-words fallback, which names no catalog entry."""
    additions = ROOT.joinpath(*module.split(".")) / "class_map_additions.json"
    if not additions.is_file():
        return corpus / "score.py"
    merged = {**json.loads((corpus / "class_map.json").read_text()), **json.loads(additions.read_text())}
    where = tmp / f"scorer-{module.rsplit('.', 1)[-1]}"
    where.mkdir(parents=True, exist_ok=True)
    (where / "class_map.json").write_text(json.dumps(merged))
    shutil.copy(corpus / "score.py", where / "score.py")
    return where / "score.py"


def directory_baseline(labels: Path) -> dict[str, int]:
    """torchrun's rule on job directories (score.py's baseline reads one file): bench.accuracy's baseline_call,
    compared with each label as score.py compares (the rank, else the host by substring). The rule names no
    failure class, so class is not scored."""
    from bench.accuracy import baseline_call

    out = dict.fromkeys(("n", "cls", "rank", "rank_n", "host", "host_n", "firm", "firm_n", "crashes"), 0)
    for raw in labels.read_text().splitlines():
        if not raw.strip():
            continue
        lab = json.loads(raw)
        call = baseline_call(labels.parent / (lab.get("path") or lab["id"]))
        out["n"] += 1
        ini = lab.get("initiating") or {}
        if ini.get("rank") is not None:
            right = call.rank == ini["rank"]
            out["rank_n"], out["rank"] = out["rank_n"] + 1, out["rank"] + right
        elif ini.get("host"):
            got = call.host or ""
            right = bool(got) and (got in ini["host"] or ini["host"] in got)
            out["host_n"], out["host"] = out["host_n"] + 1, out["host"] + right
        else:
            continue
        if lab.get("confidence") in ("high", "medium"):
            out["firm_n"], out["firm"] = out["firm_n"] + 1, out["firm"] + right
    out["cls"] = -1  # not scored
    return out


def _simulator_row(per_kind: int, hostile: bool) -> dict[str, int]:
    cmd = [sys.executable, "-m", "bench.accuracy", "--per-kind", str(per_kind), "--no-large"]
    done = subprocess.run(cmd + (["--hostile"] if hostile else []), capture_output=True, text=True, cwd=ROOT,
                          check=True)
    found = _OVERALL.search(done.stdout)
    if found is None:
        raise RuntimeError(f"bench.accuracy printed no overall row: {done.stdout[-500:]!r}")
    return {k: int(v) for k, v in found.groupdict().items()}


def _frac(hits: int, n: int) -> str:
    return f"{hits}/{n} = {hits / n:.0%}" if n and hits >= 0 else "n/a"


def markdown(rows: list[dict[str, Any]], sim: list[dict[str, Any]], tool: str) -> str:
    head = ["| set | logs | class, " + tool + " | class, torchrun's rule | initiating, " + tool +
            " | initiating, torchrun's rule | " + tool + " wrong at ≥ 0.7 (≥ 0.9) | crashes |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines = []
    for r in rows:
        ours, base = r["ours"], r["baseline"]
        ini = (ours["rank"] + ours["host"], ours["rank_n"] + ours["host_n"])
        ini_b = (base["rank"] + base["host"], base["rank_n"] + base["host_n"])
        wrong = f"{ours['wrong']} of {ours['high']} ({ours['wrong90']})" if "high" in ours else "n/a"
        lines.append(f"| {r['set']} | {ours['n']} | {_frac(ours['cls'], ours['n'])} | {_frac(base['cls'], base['n'])} "
                     f"| {_frac(*ini)} | {_frac(*ini_b)} | {wrong} | {ours['crashes']} |")
    sim_lines = ["", "| firstfault.simulate sweep (ours: checks our assumptions) | scenarios | initiating top-1, "
                 "firstfault | initiating top-1, torchrun's rule | class, firstfault |", "|---|---:|---:|---:|---:|"]
    sim_lines += [f"| {s['set']} | {s['n']} | {s['ff']}% | {s['base']}% | {s['cls']}% |" for s in sim]
    return "\n".join(head + lines + sim_lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.open", description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=shutil.which("firstfault") or str(Path(sys.executable).with_name("firstfault")),
                    help="the diagnoser to measure (default: this checkout's firstfault)")
    ap.add_argument("--per-kind", type=int, default=12, help="simulator scenarios per kind (14 kinds)")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    corpus = corpus_dir()
    if corpus is None:
        print("bench.open: ../shared/corpus is not on this machine (set FIRSTFAULT_CORPUS)", file=sys.stderr)
        return 2
    began = time.perf_counter()
    tool = "firstfault" if Path(a.exe).name == "firstfault" else Path(a.exe).name
    rows: list[dict[str, Any]] = []
    for which, half in SETS:
        if which in FIELD_SETS and not (FIELD_SETS[which] / "labels.jsonl").is_file():
            continue
        ours, base = _corpus_rows(which, half, a.exe)
        rows.append({"set": f"{which} {half}", "ours": ours, "baseline": base})
        print(f"bench.open: {which} {half} done", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for module in GENERATORS:
            for seed in SEEDS:
                scorer = generator_scorer(module, corpus, Path(tmp))
                ours, base = _independent_rows(seed, a.exe, scorer, Path(tmp), module)
                rows.append({"set": f"{module.replace('.', '/')} seed {seed}", "ours": ours, "baseline": base})
    sim = [{"set": "plain", **_simulator_row(a.per_kind, False)},
           {"set": "hostile knobs (issue 22's patterns 1-5)", **_simulator_row(a.per_kind, True)}]
    text = markdown(rows, sim, tool)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "open-benchmark.md").write_text(text)
    (a.out / "open-benchmark.json").write_text(json.dumps({"tool": tool, "exe": a.exe, "rows": rows,
                                                           "simulator": sim}, indent=1))
    sys.stdout.write(text + f"\n{time.perf_counter() - began:.0f} s; written to {a.out}/open-benchmark.md\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
