"""The lines of correlator/ that `diagnose()` executes on a tree's scan, by module and by function: counted, which
the machine's load does not move (issue 23: speed per rank).

    python -m bench.correlation_lines bench/out/sweep/r8192-200MB-s1-oom_kill-all/logs [--top 40]

The tree is scanned in this process (`--jobs 1`), then diagnosed under sys.settrace; each line executed in
correlator/ is counted, each turn of a loop too (a comprehension's), as tests/unit/test_correlation_scaling.py
counts them. Run it from another checkout (`cd CHECKOUT && PYTHONPATH=. python -m bench.correlation_lines ...`)
for the before of a change.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import correlator
from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_sources
from sources.files import expand

CORRELATOR = str(Path(correlator.__file__).parent)


def counted(logs: str) -> tuple[Counter[CodeType], int | None]:
    """Lines executed per code object of correlator/ while diagnosing ``logs``, and the rank the answer names."""
    matcher = default_matcher("auto")
    results = scan_sources(matcher, expand([logs]), 2026, jobs=1).results
    counts: Counter[CodeType] = Counter()

    def line(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            counts[frame.f_code] += 1
        return line

    def call(frame: FrameType, event: str, arg: object) -> Any:
        return line if frame.f_code.co_filename.startswith(CORRELATOR) else None

    sys.settrace(call)
    try:
        made = diagnose(results, matcher.catalog)
    finally:
        sys.settrace(None)
    return counts, made.root_cause.rank if made.root_cause else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.correlation_lines", description=__doc__.split("\n\n")[0])
    p.add_argument("logs")
    p.add_argument("--top", type=int, default=30, help="functions listed")
    a = p.parse_args(argv)
    counts, rank = counted(a.logs)
    total = sum(counts.values())
    print(f"{total:,} lines of correlator/ executed; root cause rank {rank}")
    modules: Counter[str] = Counter()
    for code, n in counts.items():
        modules[Path(code.co_filename).name] += n
    for name, n in modules.most_common(15):
        print(f"  {100 * n / total:5.1f}% {n:>11,} {name}")
    print()
    for code, n in counts.most_common(a.top):
        print(f"  {100 * n / total:5.1f}% {n:>11,} {Path(code.co_filename).name}:{code.co_firstlineno} {code.co_name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
