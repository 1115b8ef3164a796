"""Accuracy of the initiating-rank call on a seeded sweep of simulated failures, against torchrun's rule.

    .venv/bin/python -m bench.accuracy                 # 504 scenarios (36 per kind), 3 of them 1,024-4,096 ranks
    .venv/bin/python -m bench.accuracy --per-kind 4 --no-large    # a quick look
    .venv/bin/python -m bench.accuracy --per-kind 4 --no-large --hostile --records out.jsonl

For every scenario the simulator (simulate) writes the job's files and its ground truth; both
diagnosers read the same files in the same run:
- **firstfault**: the matcher and correlator, given the job's exit codes (as a JobEvent carries them) in a third
  of the scenarios as diagnose()'s argument, in another third as a job.json beside the logs;
- **baseline, torchrun's rule**: torchrun's "Root Cause (first observed failure)" is the earliest failure per
  host; across hosts the earliest by the clocks printed wins; its ``rank`` is the global rank (the table's
  ``local_rank`` is not), its ``host`` socket.getfqdn(), taken as the node it names. Without a failure table,
  the first error-looking line by printed clock wins (what a reader merging logs by timestamp does), read as a
  reader would: ``[rankN]:`` as rank N, ``[defaultN]:`` as the local rank N (so no global rank), srun's
  ``N: `` labels skipped, the host from the file's directory.

``--hostile`` turns on, at random per scenario (seeded, from a generator of its own so the plan and the other
knobs are the same draws), issue 22's patterns 1-5 (simulate/hostile.py): torchrun's local-rank
prefixes and consoles, host aliases, srun's exit reports, survivors' transport errors, silent stragglers.
``--records FILE`` writes one JSON line per scenario: the diagnosis's verdict, confidence, signature, named
rank and host, its alternatives, and whether it was right, for fitting calibration.

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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from correlator.diagnose import diagnose
from correlator.timestamps import parse_timestamp
from scan.engine import default_matcher, scan_sources
from schemas.diagnosis import Diagnosis
from simulate import SCENARIOS, Knobs, Truth, generate
from sources.files import expand

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


HOSTILE_FIELDS = ("local_prefix", "failure_table", "aliases", "launcher_reports", "survivor_transport",
                  "silent_straggler")


def hostile_knobs(rng: random.Random, knobs: Knobs) -> Knobs:
    """Issue 22's patterns 1-5, each on at random: torchrun's consoles (local-rank prefixes, a --role rank
    prefix, a global-rank template, --log-dir files), sometimes without the failure table; one naming scheme
    for the nodes; srun's exit lines; survivors' transport errors; a straggler that prints nothing."""
    prefix = rng.choice([None, "default", "default", "role", "template", "logdir"])
    return replace(knobs, local_prefix=prefix, failure_table=prefix is None or rng.random() > 0.3,
                   aliases=rng.choice([None, "slurm", "aws", "k8s"]), launcher_reports=rng.random() < 0.6,
                   survivor_transport=rng.random() < 0.6, silent_straggler=rng.random() < 0.7)


def firstfault_call(truth: Truth, root: Path, metadata: bool) -> tuple[Call, Diagnosis]:
    scan = scan_sources(default_matcher(), expand([str(root)]), YEAR)
    codes = truth.exit_codes if metadata else None
    d: Diagnosis = diagnose(scan.results, default_matcher().catalog, None, exit_codes=codes)
    rc = d.root_cause
    if rc is None:
        return Call(None, None), d
    collateral = {r for g in d.collateral for r in g.spanned_ranks()} - ({rc.rank} if rc.rank is not None else set())
    return Call(rc.rank, rc.host, collateral, rc.signature or ""), d


def scenario_record(kind: str, seed: int, knobs: Knobs, metadata: bool, truth: Truth, d: Diagnosis,
                    calls: dict[str, Call]) -> dict[str, object]:
    """One scenario for calibration: what the diagnosis JSON says, and whether it was right."""
    rc = d.root_cause
    alternatives = [[a.signature, a.rank, a.host, a.confidence] for a in d.alternatives]
    confidence = rc.confidence if rc else 0.0
    return {
        "kind": kind, "seed": seed, "world": knobs.world_size, "metadata": metadata,
        "knobs": {k: v for k, v in asdict(knobs).items() if k != "world_size"},
        "verdict": d.verdict, "confidence": confidence, "signature": rc.signature if rc else None,
        "category": rc.category if rc else None, "rank": rc.rank if rc else None, "host": rc.host if rc else None,
        "evidence": len(rc.evidence) if rc else 0, "has_time": bool(rc and rc.time),
        "explanation_steps": len(rc.explanation) if rc else 0, "alternatives": alternatives,
        "margin": confidence - max((a.confidence for a in d.alternatives), default=0.0),
        "collateral_ranks": len({r for g in d.collateral for r in g.spanned_ranks()}),
        "truth": {"rank": truth.rank, "host": truth.host, "job_wide": truth.job_wide, "hint": truth.signature_hint},
        "right": correct(truth, calls["firstfault"]), "class_right": class_ok(truth, calls["firstfault"]),
        "baseline_right": correct(truth, calls["baseline"], any_name=True),
        # the rest of the JSON contract (without the long timeline), for features added to it later
        "diagnosis": d.model_dump(mode="json", exclude={"timeline", "collateral"}),
    }


def _text_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "trace_" not in p.name and p.name != "job.json")


_SRUN_LABEL = re.compile(r"^\s*\d+: ")
_PREFIX = re.compile(r"^\[(rank|[a-z_]+)(\d+)\]: ?")
_RANK_FILE = re.compile(r"rank(\d+)\.log$")


def _reader(line: str, path: Path) -> tuple[int | None, str]:
    """Who printed a line, as a reader merging logs sees it: ``[rankN]:`` is rank N, ``[roleN]:`` a local rank
    (no global rank), the file's own name rankN.log otherwise; srun's task label is skipped."""
    line = _SRUN_LABEL.sub("", line, count=1)
    m = _PREFIX.match(line)
    if m:
        return (int(m[2]) if m[1] == "rank" else None), line[m.end():]
    named = _RANK_FILE.search(path.name)
    return (int(named[1]) if named else None), line


def baseline_call(root: Path) -> Call:
    """torchrun's rule: the earliest per-host 'first observed failure'; else the earliest error line."""
    tables: list[tuple[str, str, int]] = []
    first_lines: list[tuple[float, int, int | None, str | None]] = []
    errors: set[int] = set()
    for order, path in enumerate(_text_files(root)):
        parts = path.relative_to(root).parts
        host = parts[0] if len(parts) > 1 else None
        text = path.read_text(errors="replace")
        for m in re.finditer(r"Root Cause \(first observed failure\):\n.*\n(.*)\n(.*)\n(.*)\n", text):
            t, h, r = _TABLE_TIME.search(m[1]), _TABLE_HOST.search(m[2]), _TABLE_RANK.search(m[3])
            if t and h and r:
                tables.append((t[1], h[1], int(r[1])))
        for line in text.splitlines():
            if not ERRORISH.search(line):
                continue
            rank, body = _reader(line, path)
            if rank is not None:
                errors.add(rank)
            stamp = parse_timestamp(body, YEAR)
            when = stamp.time.timestamp() if stamp and stamp.clock == "wall" else float("inf")
            first_lines.append((when, order, rank, host))
    if tables:
        _, table_host, table_rank = min(tables)
        return Call(table_rank, table_host, errors - {table_rank})
    if not first_lines:
        return Call(None, None)
    _, _, rank, host = min(first_lines, key=lambda x: (x[0], x[1]))
    return Call(rank, host, errors - ({rank} if rank is not None else set()))


def correct(truth: Truth, call: Call, any_name: bool = False) -> bool:
    """Right rank, or right host where the truth names only a host. firstfault must name the node as the
    scheduler does; ``any_name`` (the baseline) accepts any of its names, as a reader of torchrun's table
    knows node003.cluster.internal is node003."""
    if truth.job_wide:
        return call.rank is None and call.host is None
    if truth.rank is None:
        names = set(truth.aliases.get(truth.host or "", [])) if any_name else set()
        return call.host == truth.host or call.host in names
    return call.rank == truth.rank


def class_ok(truth: Truth, call: Call) -> bool:
    """The reported catalog entry is one the scenario's cause belongs to (none, for the uncatalogued one)."""
    if not truth.signature_hint:
        return not call.signature
    return any(hint in call.signature for hint in truth.signature_hint.split("|"))


def record(tally: Tally, name: str, truth: Truth, call: Call) -> None:
    tally.hits[name] += correct(truth, call, any_name=name == "baseline")
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


def run(per_kind: int, large: bool, seed: int, verbose: bool = False, hostile: bool = False,
        records: list[dict[str, object]] | None = None) -> dict[str, Tally]:
    tallies: dict[str, Tally] = defaultdict(Tally)
    rng = random.Random(seed + 1)
    hostile_rng = random.Random(seed + 22)  # its own draws: the plan and the other knobs stay the same
    for kind, world, s in plan(per_kind, large, seed):
        knobs, metadata = knobs_for(rng, world)
        if hostile:
            knobs = hostile_knobs(hostile_rng, knobs)
        root = Path(tempfile.mkdtemp(prefix=f"ff-acc-{kind}-"))
        try:
            truth = generate(kind, root, s, knobs)
            ff, d = firstfault_call(truth, root, metadata)
            calls = {"firstfault": ff, "baseline": baseline_call(root)}
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if records is not None:
            records.append(scenario_record(kind, s, knobs, metadata, truth, d, calls))
        if verbose and not correct(truth, ff):
            sys.stderr.write(f"miss {kind} seed={s} {knobs} metadata={metadata}: want {truth.rank}/{truth.host} "
                             f"got {ff.rank}/{ff.host} {ff.signature}\n")
        for key in (kind, "overall", *(knob_keys(knobs, kind) if hostile else [])):
            tallies[key].n += 1
            for name, call in calls.items():
                record(tallies[key], name, truth, call)
    return tallies


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.0%}" if b else "n/a"


def knob_keys(knobs: Knobs, kind: str) -> list[str]:
    """The hostile knobs a scenario had on, as tally keys: which pattern costs what (a silent straggler only
    where there is a straggler)."""
    values = {f: getattr(knobs, f) for f in HOSTILE_FIELDS if f != "silent_straggler" or kind == "straggler"}
    keys = [f"{f}={v}" for f, v in values.items() if f in ("local_prefix", "aliases") and v]
    keys += [f for f, v in values.items() if f not in ("local_prefix", "aliases", "failure_table") and v is True]
    return keys + (["no failure_table"] if not knobs.failure_table else [])


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
    knobs = sorted(k for k in tallies if k not in SCENARIOS and k != "overall")
    if knobs:
        rows += ["", "| hostile knob on | n | top-1 firstfault | top-1 torchrun's rule | class firstfault |",
                 "|---|---:|---:|---:|---:|"]
        rows += [f"| {k} | {tallies[k].n} | {_ratio(tallies[k].hits['firstfault'], tallies[k].n)} "
                 f"| {_ratio(tallies[k].hits['baseline'], tallies[k].n)} "
                 f"| {_ratio(tallies[k].classes['firstfault'], tallies[k].n)} |" for k in knobs]
    return "\n".join(rows) + f"\n\n{tallies['overall'].n} scenarios in {seconds:.0f} s\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--per-kind", type=int, default=36, help="scenarios per kind (default 36: 504 in all)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--no-large", action="store_true", help="skip the 1,024- and 4,096-rank scenarios")
    p.add_argument("-v", "--verbose", action="store_true", help="print every scenario firstfault gets wrong")
    p.add_argument("--hostile", "--knobs", action="store_true", dest="hostile",
                   help="turn on issue 22's patterns 1-5 at random per scenario (simulate/hostile.py)")
    p.add_argument("--records", type=Path, help="write one JSON line per scenario (diagnosis features, right?)")
    args = p.parse_args(argv)
    began = time.perf_counter()
    records: list[dict[str, object]] | None = [] if args.records else None
    tallies = run(args.per_kind, not args.no_large, args.seed, args.verbose, args.hostile, records)
    text = report(tallies, time.perf_counter() - began)
    sys.stdout.write(("hostile knobs on\n\n" if args.hostile else "") + text)
    if args.records and records is not None:
        args.records.write_text("".join(json.dumps(r, default=str) + "\n" for r in records))
    OUT.mkdir(exist_ok=True)
    (OUT / ("accuracy-hostile.json" if args.hostile else "accuracy.json")).write_text(json.dumps(
        {k: {"n": t.n, "hits": t.hits, "classes": t.classes, "tp": t.tp, "predicted": t.predicted, "actual": t.actual}
         for k, t in tallies.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
