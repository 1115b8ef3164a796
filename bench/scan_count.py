"""The in-process scan of a tree's rank files, for counting its instructions (issue 23: speed per rank):

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.0 python -m bench.scan_count TREE --files 0
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.1000 python -m bench.scan_count TREE --files 1000

Builds the matcher, scans and interns ``--warm`` files (the memos, the regexes compiled on first use, the
allocator's arenas), then scans and interns ``--files`` others (from the tree's ``--warm``-th on), as the engine
does in one process (scan/engine.py). The difference of the two runs' totals is what ``--files`` files cost, free
of start-up; counts move far less than seconds on a loaded machine. `callgrind_annotate --inclusive=yes` on both
splits it by function (Hyperscan, `re`, the C loop, the interpreter).
"""

from __future__ import annotations

import argparse

from correlator.interned import Interner
from firstfault.memtune import keep_freed_blocks, no_collections
from scan.engine import default_matcher
from scan.source import order_base, scan_source
from sources.files import chunks, expand


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scan_count", description=__doc__.split("\n\n")[0])
    p.add_argument("logs")
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--warm", type=int, default=200)
    a = p.parse_args(argv)
    keep_freed_blocks()  # as the CLI
    sources = expand([a.logs])
    matcher = default_matcher("auto")
    no_collections()
    interner = Interner()
    for index, source in enumerate(sources[: a.warm] + sources[a.warm : a.warm + a.files]):
        interner.result(scan_source(matcher, source.name, chunks(source), 2026, order_base(index)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
