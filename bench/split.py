"""One big srun -l file, diagnosed in pieces (scan/split.py) and by one process, against ``rg -c -f`` with the
matcher's own regexes, in the same rounds.

    .venv/bin/python -m bench.split                       # 512 ranks, ~400 MB, 3 rounds
    .venv/bin/python -m bench.split --ranks 512 --size 300MB --rounds 5 --out /tmp/ff-split

The file is bench.generate's ``--single-file`` output (kept under --out between runs). Each round runs
``firstfault diagnose FILE --jobs 1`` (one process), ``--jobs N`` (N processes: split), ``rg -c -f`` on all
threads and ``rg -c -f -j1``, in turn (reversed every other round: see bench/timing.py), and checks that the split
diagnosis is the one-process diagnosis, byte for byte. Ratios are taken within each round (bench.timing.paired).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.generate import SINGLE_FILE, generate, parse_size
from bench.matcher import run_diagnose, warm
from bench.rg import export_patterns, rg_path, rg_version, run_rg
from bench.timing import Timing, log, paired, rounds
from scan import split
from scan.engine import build_matcher, cached_catalog, default_matcher, scan_source
from sources.files import Source, chunks


def _ratio(x: Timing, y: Timing) -> dict[str, float] | None:
    """How many times y's time x's takes, round by round (median and range)."""
    found = paired(y, x)
    return found and {k: round(v, 2) for k, v in found.items()}


def _timed_piece(*args: Any, **kwargs: Any) -> Any:
    """scan_piece, reporting its CPU seconds (process_time: what a busy neighbour's share does not inflate)."""
    start = time.process_time()
    part = _scan_piece(*args, **kwargs)
    part.cpu = (os.getpid(), time.process_time() - start)
    return part


_scan_piece = split.scan_piece


def cpu_path(path: Path, jobs: int) -> dict[str, Any]:
    """The split scan's critical path in CPU seconds, in this process: each worker's pieces summed, and what the
    parent does after the last piece arrives. On a shared machine (a neighbour holding a core) the wall clock
    cannot show what the split does with free cores; CPU seconds can. Beside it, one process's scan."""
    from firstfault.memtune import keep_freed_blocks

    keep_freed_blocks()
    matcher = default_matcher()
    source = Source(path.name, path)
    start = time.process_time()
    scan_source(matcher, source.name, chunks(source), 2026)
    one = time.process_time() - start
    per_worker: dict[int, float] = {}
    arrived: list[float] = []

    def reported(nbytes: int) -> None:
        arrived.append(time.process_time())

    split.scan_piece = _timed_piece  # type: ignore[assignment]  # the forked workers inherit it
    original = split.merge

    def merged(matcher: Any, name: str, base: int, parts: Any) -> Any:
        def seen() -> Any:
            for part in parts:
                pid, cpu = part.cpu
                per_worker[pid] = per_worker.get(pid, 0.0) + cpu
                yield part
        result = original(matcher, name, base, seen())
        arrived.append(time.process_time())
        return result

    split.merge = merged  # type: ignore[assignment]
    try:
        assert split.scan_split(matcher, source, 2026, 0, jobs, reported) is not None
    finally:
        split.scan_piece, split.merge = _scan_piece, original  # type: ignore[assignment]
    tail = arrived[-1] - arrived[-2]  # the parent's merge after the last piece
    critical = max(per_worker.values()) + tail
    return {"one_process_scan_cpu_s": round(one, 3), "workers_cpu_s": sorted(round(v, 3) for v in per_worker.values()),
            "parent_after_last_piece_cpu_s": round(tail, 3), "split_scan_critical_path_s": round(critical, 3),
            "one_over_split_scan_critical_path": round(one / critical, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.split", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/ff-split"))
    p.add_argument("--ranks", type=int, default=512)
    p.add_argument("--size", type=parse_size, default=parse_size("400MB"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    a = p.parse_args(argv)
    path = a.out / "logs" / SINGLE_FILE
    if not path.is_file():
        log(f"generating {a.ranks} ranks, {a.size / 1e6:.0f} MB into {path}")
        generate(a.out, a.ranks, a.size, 1, "cuda_oom", quiet=True, single_file=True)
    nbytes = path.stat().st_size
    warm([path])
    cache = a.out / "cache"
    one_json, split_json = a.out / "one.json", a.out / "split.json"
    steps: list[tuple[str, str, int, Any]] = [
        ("one", "diagnose --jobs 1 (one process)", nbytes, lambda: run_diagnose(path, one_json, cache, "--jobs", "1")),
        ("split", f"diagnose --jobs {a.jobs} (split)", nbytes,
         lambda: run_diagnose(path, split_json, cache, "--jobs", str(a.jobs))),
    ]
    rg = rg_path()
    if rg is None:
        log("ripgrep (rg) not found: the rg columns are skipped. Install it with `apt-get install -y ripgrep`.")
    else:
        patterns = export_patterns(build_matcher(cached_catalog(None, None)).patterns, rg, a.out / "patterns.rg")
        pattern_file = Path(patterns["file"])
        steps += [("rg", "rg -c -f (all threads)", nbytes, lambda: run_rg(rg, pattern_file, [path], None)),
                  ("rg_j1", "rg -c -f -j1", nbytes, lambda: run_rg(rg, pattern_file, [path], 1))]
    run_diagnose(path, one_json, cache, "--jobs", "1")  # the scanner cache warm before the rounds
    timings = rounds(steps, a.rounds)
    same = one_json.read_bytes() == split_json.read_bytes()
    result: dict[str, Any] = {
        "file": str(path), "bytes": nbytes, "ranks": a.ranks, "jobs": a.jobs, "cores": os.cpu_count(),
        "rg": rg_version(rg) if rg else None, "split_diagnosis_equal": same,
        "timings": {k: t.json() for k, t in timings.items()},
        "split_over_one": _ratio(timings["split"], timings["one"]),
    }
    if rg:
        result |= {"one_over_rg": _ratio(timings["one"], timings["rg"]),
                   "split_over_rg": _ratio(timings["split"], timings["rg"]),
                   "one_over_rg_j1": _ratio(timings["one"], timings["rg_j1"])}
    result["cpu_path"] = cpu_path(path, a.jobs)
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
