"""Instructions of the work alone, start-up left out, under callgrind (issue 23: speed per rank, counted):

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.scan \\
        python -m bench.callgrind_work scan TREE [--files 1000] [--warm 200]
    python -m bench.callgrind_work dump TREE /tmp/scan.pkl            # a tree's --jobs 1 scan, pickled (no valgrind)
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.corr \\
        python -m bench.callgrind_work correlate /tmp/scan.pkl

``scan``: the matcher built, ``--warm`` rank files scanned and interned (the memos, the regexes compiled on first
use), then instrumentation switched on (``callgrind_control -i on`` on this process) and ``--files`` more scanned
and interned, as bench.scan_count does. ``correlate``: ``diagnose(release=True)`` on the pickled results, as the
CLI runs it. The process ends with ``os._exit`` right after the work, as the CLI does, so the "Collected" total is
the work's: no second run to subtract (bench.scan_count's way), and start-up, run uninstrumented, costs a fifth
of the time. Without valgrind (or callgrind_control) the work simply runs.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable

from firstfault.memtune import keep_freed_blocks, no_collections
from scan.engine import default_matcher


def _scan_work(logs: str, warm: int, files: int) -> Callable[[], None]:
    from correlator.interned import Interner
    from scan.source import order_base, scan_source
    from sources.files import chunks, expand

    sources = expand([logs])
    matcher = default_matcher("auto")
    no_collections()
    interner = Interner()
    for index, source in enumerate(sources[:warm]):
        interner.result(scan_source(matcher, source.name, chunks(source), 2026, order_base(index)))

    def work() -> None:
        for index, source in enumerate(sources[warm : warm + files], warm):
            interner.result(scan_source(matcher, source.name, chunks(source), 2026, order_base(index)))

    return work


def _correlate_work(pickled: str) -> Callable[[], None]:
    from correlator.diagnose import diagnose

    catalog = default_matcher("auto").catalog
    with open(pickled, "rb") as f:
        results = pickle.load(f)
    no_collections()

    def work() -> None:
        diagnose(results, catalog, release=True)

    return work


def _dump(logs: str, out: str) -> None:
    from scan.engine import scan_sources
    from sources.files import expand

    results = scan_sources(default_matcher("auto"), expand([logs]), 2026, jobs=1).results
    with open(out, "wb") as f:
        pickle.dump(list(results), f, protocol=5)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.callgrind_work", description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("scan", "correlate", "dump"))
    p.add_argument("path", help="a tree of logs (scan, dump), or a pickled scan (correlate)")
    p.add_argument("out", nargs="?", help="dump: where the pickle goes")
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--warm", type=int, default=200)
    a = p.parse_args(argv)
    keep_freed_blocks()  # as the CLI
    if a.mode == "dump":
        if not a.out:
            p.error("dump needs OUT")
        _dump(a.path, a.out)
        return 0
    work = _scan_work(a.path, a.warm, a.files) if a.mode == "scan" else _correlate_work(a.path)
    control = shutil.which("callgrind_control")
    if control:  # answered once callgrind has taken the command: the work below is counted, nothing before it
        subprocess.run([control, "-i", "on", str(os.getpid())], capture_output=True, check=False)
    work()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
