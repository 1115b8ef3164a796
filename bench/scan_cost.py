"""What a rank file's scan costs, part by part, in one process (issue 23: speed per rank).

    python -m bench.scan_cost bench/out/sweep/r8192-200MB-s1-oom_kill-all/logs [--files 4000] [--runs 3]

Each row is CPU time a file (the least of ``--runs``), cumulative where it says so: reading it (`chunks`);
reading and `Matcher.spans` (Hyperscan, the C line loop, each distinct line's confirmation and captures);
constructing a `SourceScanner` and reading its path's speaker alone; the whole `scan_source`; and that with the
result interned as the engine interns it. A tree's files are read once first, so that the page cache holds them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from correlator.interned import Interner
from correlator.reading import SourceScanner
from correlator.speakers import who_from_path
from firstfault.memtune import keep_freed_blocks, no_collections
from scan.engine import default_matcher
from scan.source import order_base, scan_source
from sources.files import Source, chunks, expand


def parts(sources: list[Source]) -> dict[str, Callable[[], object]]:
    matcher = default_matcher("auto")

    def reading() -> None:
        for source in sources:
            for _ in chunks(source):
                pass

    def spans() -> None:
        for source in sources:
            memo: dict[bytes, object] = {}
            for block in chunks(source):
                for _ in matcher.spans(block, memo, ({}, {})):  # type: ignore[arg-type]
                    pass

    def scanner() -> None:
        for source in sources:
            SourceScanner(matcher, source.name, who_from_path(source.name), 2026, 0, fold_context=True)

    def scanned() -> None:
        for index, source in enumerate(sources):
            scan_source(matcher, source.name, chunks(source), 2026, order_base(index))

    def interned() -> None:
        interner = Interner()
        for index, source in enumerate(sources):
            interner.result(scan_source(matcher, source.name, chunks(source), 2026, order_base(index)))

    return {"reading": reading, "reading and Matcher.spans": spans, "SourceScanner and who_from_path": scanner,
            "scan_source": scanned, "scan_source and interning": interned}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scan_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("logs")
    p.add_argument("--files", type=int, default=4000, help="the tree's first N files")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args(argv)
    keep_freed_blocks()  # as the CLI
    sources = expand([a.logs])[: a.files]
    steps = parts(sources)
    no_collections()
    best = dict.fromkeys(steps, float("inf"))
    steps["reading"]()  # the page cache holds them from here on
    for _ in range(a.runs):
        for name, step in steps.items():  # interleaved: the machine's load moves every row alike
            began = time.process_time()
            step()
            best[name] = min(best[name], time.process_time() - began)
    print(f"{len(sources)} files of {a.logs}, CPU time a file, least of {a.runs} runs")
    for name, seconds in best.items():
        print(f"  {name:34s} {seconds / len(sources) * 1e6:8.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
