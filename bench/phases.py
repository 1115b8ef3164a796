"""PSS of `firstfault diagnose`'s process after the scan and after each of diagnose()'s steps (issue 23: where the
peak is, and what each step's objects cost in pages, not in traced bytes):

    python -m bench.phases LOGS [--jobs N] [--pymalloc] [--drop-kinds K,K] [--drop-signatures S,S]

The scan runs as the CLI runs it (the pool unless ``--jobs 1``, the freed blocks handed back after it), then
``diagnose(release=True)`` with each step named in STEPS wrapped to read /proc/self/smaps_rollup as it returns.
With ``--pymalloc``, each reading also gives pymalloc's bytes in allocated and in available (freed, resident)
blocks, from ``sys._debugmallocstats()``: a step whose PSS rises while its traced bytes do not is filling pages of
a size class whose freed blocks sit in other pools (the fifth and seventh rounds of docs/performance.md).

``--drop-kinds`` and ``--drop-signatures`` are upper bounds, not diagnoses: the records of those kinds, or the
findings of those signatures, are let go of as each source's results arrive (after interning), so the run shows
what a columnar form of them could save at most; the diagnosis printed is then not the real one.

One JSON object on stdout: ``phases`` as [step, PSS MB (, allocated MB, available MB)] in the order reached, the
peak, and the diagnosis's rank and signature. Run it from the checkout whose code is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

# diagnose()'s steps as correlator.diagnose imports them, in the order they run
STEPS = ("gathered", "build_identity", "settle", "named_by_paths", "init_lines", "place_named_rank", "read_carried",
         "build_events", "derived_events", "collective_lags", "lag_events", "clock_offsets", "mark_stale", "assign",
         "before_cascade", "differential", "spare_messengers", "score", "with_impact")
_STAT = re.compile(rb"# bytes in (allocated|available) blocks\s+=\s+([\d,]+)")


def pss_mb() -> float:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


def pymalloc_mb() -> tuple[float, float]:
    """pymalloc's bytes in allocated and in available blocks, MB (``sys._debugmallocstats`` writes to fd 2)."""
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        found = {m.group(1): int(m.group(2).replace(b",", b"")) for m in _STAT.finditer(out.read())}
    return found.get(b"allocated", 0) / 2**20, found.get(b"available", 0) / 2**20


def _reading(with_pymalloc: bool) -> Callable[[str], list[Any]]:
    def read(step: str) -> list[Any]:
        row: list[Any] = [step, round(pss_mb(), 1)]
        if with_pymalloc:
            row += [round(v, 1) for v in pymalloc_mb()]
        return row
    return read


def _wrap_steps(module: Any, phases: list[list[Any]], read: Callable[[str], list[Any]]) -> None:
    for name in STEPS:
        step = getattr(module, name)

        def wrapped(*args: Any, _step: Any = step, _name: str = name, **kwargs: Any) -> Any:
            out = _step(*args, **kwargs)
            phases.append(read(_name))
            return out
        setattr(module, name, wrapped)


def _drop_on_arrival(kinds: frozenset[str], signatures: frozenset[str]) -> None:
    """On both paths a result arrives by: a process's own scan (Interner.result) and the pool's (scan.pool's
    unpack of a worker's batch)."""
    import scan.pool
    from correlator.interned import Interner

    def dropped(r: Any) -> Any:
        if kinds:
            r.context = [rec for rec in r.context if rec.kind not in kinds]
        if signatures:
            r.findings = [f for f in r.findings if f.signature not in signatures]
        return r
    interned, unpacked = Interner.result, scan.pool.unpack  # type: ignore[attr-defined]
    Interner.result = lambda self, r: dropped(interned(self, r))  # type: ignore[method-assign,assignment]
    scan.pool.unpack = lambda *args: dropped(unpacked(*args))  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.phases", description=__doc__.split("\n\n")[0])
    p.add_argument("logs")
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--pymalloc", action="store_true", help="pymalloc's allocated and available bytes too")
    p.add_argument("--drop-kinds", default="", help="record kinds let go of on arrival (an upper bound)")
    p.add_argument("--drop-signatures", default="", help="findings' signatures let go of on arrival (an upper bound)")
    a = p.parse_args(argv)
    import correlator.diagnose as diagnosing
    from firstfault.memtune import hand_back_freed_blocks, keep_freed_blocks, no_collections
    from scan.engine import default_matcher, scan_sources
    from sources.files import expand

    kinds = frozenset(filter(None, a.drop_kinds.split(",")))
    signatures = frozenset(filter(None, a.drop_signatures.split(",")))
    if kinds or signatures:
        _drop_on_arrival(kinds, signatures)
    read = _reading(a.pymalloc)
    phases: list[list[Any]] = []
    _wrap_steps(diagnosing, phases, read)
    keep_freed_blocks()
    matcher = default_matcher("auto")
    no_collections()  # as the CLI: after start-up
    phases.append(read("started"))
    t0 = time.perf_counter()
    sources = expand([a.logs])
    scan = scan_sources(matcher, sources, 2026, jobs=a.jobs)
    del sources  # as the CLI: the listing let go of before correlating
    phases.append(read("scanned"))
    hand_back_freed_blocks()
    phases.append(read("handed_back"))
    results = scan.results
    del scan
    diagnosis = diagnosing.diagnose(results, matcher.catalog, release=True)
    phases.append(read("diagnosed"))
    rc = diagnosis.root_cause
    sys.stdout.write(json.dumps({"logs": a.logs, "jobs": a.jobs, "dropped": sorted(kinds | signatures),
                                 "phases": phases, "peak_mb": max(row[1] for row in phases),
                                 "seconds": round(time.perf_counter() - t0, 1),
                                 "rank": rc.rank if rc else None, "signature": rc.signature if rc else None}) + "\n")
    sys.stdout.flush()
    os._exit(0)  # as the console script


if __name__ == "__main__":
    raise SystemExit(main())
