"""Accuracy of the initiating-rank call on a seeded sweep of simulated failures, against torchrun's rule.

    .venv/bin/python -m bench.accuracy                 # 504 scenarios (36 per kind), 3 of them 1,024-4,096 ranks
    .venv/bin/python -m bench.accuracy --per-kind 4 --no-large    # a quick look

For every scenario the simulator (firstfault.simulate) writes the job's files and its ground truth; both
diagnosers read the same files in the same run:
- **firstfault**: the matcher and correlator, given the job's exit codes (as a JobEvent carries them) in a third
  of the scenarios as diagnose()'s argument, in another third as a job.json beside the logs;
- **baseline, torchrun's rule**: torchrun's "Root Cause (first observed failure)" is the earliest failure per
  host; across hosts the earliest by the clocks printed wins; without a failure table, the first error-looking
  line by printed clock wins (what a reader merging logs by timestamp does).

Initiating top-1 counts the rank where the truth names one, the host where it names only a host, and "nobody"
for a job-wide fault. Collateral precision and recall are micro-averaged over the ranks the truth marks as
having printed only consequences.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from correlator.diagnose import diagnose
from correlator.speakers import read_prefixes, who_from_path
from correlator.timestamps import parse_timestamp
from firstfault.engine import default_matcher, scan_sources
from firstfault.simulate import SCENARIOS, Knobs, Truth, generate
from ingest.files import expand
from schemas.diagnosis import Diagnosis

YEAR = 2026
OUT = Path(__file__).resolve().parent / "out"
ERRORISH = re.compile(r"error|fail|warn|exception|killed|timeout|timed out|abort|refused|reset by peer|fatal|oom|xid",
                      re.I)
_TABLE_TIME = re.compile(r"time\s+: (\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d)")
_TABLE_HOST = re.compile(r"host\s+: (\S+)")
_TABLE_RANK = re.compile(r"rank\s+: (\d+) \(local_rank")


@dataclass
class Call:
    rank: int | None
    host: str | None
    collateral: set[int] = field(default_factory=set)
    signature: str = ""


@dataclass
class Tally:
    n: int = 0
    hits: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    classes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    tp: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    predicted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    actual: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def knobs_for(rng: random.Random, world: int) -> tuple[Knobs, bool]:
    """A draw of the knobs: skew, lost and truncated shards, interleaving, dumps, desync debug, noise, and the
    job's metadata: none, passed to diagnose() as the pipeline does, or as job.json beside the logs."""
    metadata = rng.choice(["none", "argument", "file"])
    knobs = Knobs(
        world_size=world,
        max_skew_s=rng.choice([0.0, 30.0, 120.0, 300.0]),
        missing=rng.choice([0.0, 0.0, 0.1, 0.25]),
        truncated=rng.choice([0.0, 0.0, 0.1, 0.25]),
        interleaved=rng.random() < 0.15,
        flight_recorder=rng.choice([None, None, "pickle", "json"]),
        desync_debug=rng.random() < 0.3,
        noise=rng.choice([0.0, 0.1, 0.3]),
        job_file=metadata == "file",
    )
    return knobs, metadata == "argument"


def firstfault_call(truth: Truth, root: Path, metadata: bool) -> Call:
    scan = scan_sources(default_matcher(), expand([str(root)]), YEAR)
    codes = truth.exit_codes if metadata else None
    d: Diagnosis = diagnose(scan.results, default_matcher().catalog, None, exit_codes=codes)
    rc = d.root_cause
    if rc is None:
        return Call(None, None)
    collateral = {r for g in d.collateral for r in g.ranks} - ({rc.rank} if rc.rank is not None else set())
    return Call(rc.rank, rc.host, collateral, rc.signature or "")


def _text_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "trace_" not in p.name and p.name != "job.json")


def baseline_call(root: Path) -> Call:
    """torchrun's rule: the earliest per-host 'first observed failure'; else the earliest error line."""
    tables: list[tuple[str, str, int]] = []
    first_lines: list[tuple[float, int, int | None, str | None]] = []
    errors: set[int] = set()
    for order, path in enumerate(_text_files(root)):
        base = who_from_path(str(path.relative_to(root)))
        text = path.read_text(errors="replace")
        for m in re.finditer(r"Root Cause \(first observed failure\):\n.*\n(.*)\n(.*)\n(.*)\n", text):
            t, h, r = _TABLE_TIME.search(m[1]), _TABLE_HOST.search(m[2]), _TABLE_RANK.search(m[3])
            if t and h and r:
                tables.append((t[1], h[1], int(r[1])))
        for line in text.splitlines():
            if not ERRORISH.search(line):
                continue
            who, body = read_prefixes(line, base)
            if who.rank is not None:
                errors.add(who.rank)
            stamp = parse_timestamp(body, YEAR)
            when = stamp.time.timestamp() if stamp and stamp.clock == "wall" else float("inf")
            first_lines.append((when, order, who.rank, who.host or base.host))
    if tables:
        _, table_host, table_rank = min(tables)
        return Call(table_rank, table_host, errors - {table_rank})
    if not first_lines:
        return Call(None, None)
    _, _, rank, host = min(first_lines, key=lambda x: (x[0], x[1]))
    return Call(rank, host, errors - ({rank} if rank is not None else set()))


def correct(truth: Truth, call: Call) -> bool:
    if truth.job_wide:
        return call.rank is None and call.host is None
    if truth.rank is None:
        return call.host == truth.host
    return call.rank == truth.rank


def class_ok(truth: Truth, call: Call) -> bool:
    """The reported catalog entry is one the scenario's cause belongs to (none, for the uncatalogued one)."""
    if not truth.signature_hint:
        return not call.signature
    return any(hint in call.signature for hint in truth.signature_hint.split("|"))


def record(tally: Tally, name: str, truth: Truth, call: Call) -> None:
    tally.hits[name] += correct(truth, call)
    tally.classes[name] += class_ok(truth, call)
    if truth.job_wide:
        return  # nobody initiated: "collateral" has no meaning
    tally.tp[name] += len(call.collateral & truth.collateral)
    tally.predicted[name] += len(call.collateral)
    tally.actual[name] += len(truth.collateral)


def plan(per_kind: int, large: bool, seed: int) -> list[tuple[str, int, int]]:
    """(scenario, world size, seed) for the sweep: small worlds mostly, a few large ones."""
    rng = random.Random(seed)
    runs = [(kind, rng.choice([8, 16, 16, 32, 32, 64, 128]), rng.randrange(1 << 30))
            for _ in range(per_kind) for kind in SCENARIOS]
    if large:
        runs += [("oom_killer", 1024, 11), ("nic_failure", 1024, 12), ("straggler", 4096, 13)]
    return runs


def run(per_kind: int, large: bool, seed: int, verbose: bool = False) -> dict[str, Tally]:
    tallies: dict[str, Tally] = defaultdict(Tally)
    rng = random.Random(seed + 1)
    for kind, world, s in plan(per_kind, large, seed):
        knobs, metadata = knobs_for(rng, world)
        root = Path(tempfile.mkdtemp(prefix=f"ff-acc-{kind}-"))
        try:
            truth = generate(kind, root, s, knobs)
            calls = {"firstfault": firstfault_call(truth, root, metadata), "baseline": baseline_call(root)}
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if verbose and not correct(truth, calls["firstfault"]):
            got = calls["firstfault"]
            sys.stderr.write(f"miss {kind} seed={s} {knobs} metadata={metadata}: want {truth.rank}/{truth.host} "
                             f"got {got.rank}/{got.host}\n")
        for key in (kind, "overall"):
            tallies[key].n += 1
            for name, call in calls.items():
                record(tallies[key], name, truth, call)
    return tallies


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.0%}" if b else "n/a"


def report(tallies: dict[str, Tally], seconds: float) -> str:
    rows = ["| scenario | n | top-1 firstfault | top-1 torchrun's rule | class firstfault "
            "| collateral P / R firstfault | collateral P / R torchrun's rule |", "|---|---:|---:|---:|---:|---:|---:|"]
    for kind in [*SCENARIOS, "overall"]:
        t = tallies.get(kind)
        if t is None:
            continue
        cells = [f"{_ratio(t.tp[n], t.predicted[n])} / {_ratio(t.tp[n], t.actual[n])}"
                 for n in ("firstfault", "baseline")]
        name = f"**{kind}**" if kind == "overall" else kind
        rows.append(f"| {name} | {t.n} | {_ratio(t.hits['firstfault'], t.n)} | {_ratio(t.hits['baseline'], t.n)} "
                    f"| {_ratio(t.classes['firstfault'], t.n)} | {cells[0]} | {cells[1]} |")
    return "\n".join(rows) + f"\n\n{tallies['overall'].n} scenarios in {seconds:.0f} s\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--per-kind", type=int, default=36, help="scenarios per kind (default 36: 504 in all)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--no-large", action="store_true", help="skip the 1,024- and 4,096-rank scenarios")
    p.add_argument("-v", "--verbose", action="store_true", help="print every scenario firstfault gets wrong")
    args = p.parse_args(argv)
    began = time.perf_counter()
    tallies = run(args.per_kind, not args.no_large, args.seed, args.verbose)
    text = report(tallies, time.perf_counter() - began)
    sys.stdout.write(text)
    OUT.mkdir(exist_ok=True)
    (OUT / "accuracy.json").write_text(json.dumps(
        {k: {"n": t.n, "hits": t.hits, "classes": t.classes, "tp": t.tp, "predicted": t.predicted, "actual": t.actual}
         for k, t in tallies.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
