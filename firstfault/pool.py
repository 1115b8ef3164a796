"""Scanning many files in a process pool. Each worker scans whole files with the parent's matcher and returns
their SourceResults; the parent puts them back in input order, so the diagnosis is the one a single process makes.

Workers are forked: they inherit the parent's compiled matcher (Hyperscan database, scratch, compiled regexes)
instead of building their own or receiving it pickled. Where fork does not exist, the caller scans in-process.
"""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable

from catalog.matcher import Matcher
from correlator.reading import SourceResult
from ingest.files import Source, chunks

_matcher: Matcher | None = None  # set in each forked worker only, by _adopt


def _adopt(matcher: Matcher) -> None:
    global _matcher
    _matcher = matcher


def _scan_one(task: tuple[int, Source, int, int]) -> tuple[int, SourceResult]:
    from firstfault.engine import scan_source

    index, source, year, base = task
    assert _matcher is not None, "worker started without a matcher"
    return index, scan_source(_matcher, source.name, chunks(source), year, base)


def scan_in_pool(matcher: Matcher, sources: list[Source], year: int, workers: int,
                 progress: Callable[[int], None] | None = None) -> list[SourceResult] | None:
    """The results of every source in input order, or None when this platform cannot fork."""
    from firstfault.engine import order_base

    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    # Largest files first, so that no worker is left with a big file at the end while the others idle.
    sizes = [s.path.stat().st_size if s.path is not None else 0 for s in sources]
    order = sorted(range(len(sources)), key=lambda i: -sizes[i])
    tasks = [(i, sources[i], year, order_base(i)) for i in order]
    results: list[SourceResult | None] = [None] * len(sources)
    # Frozen objects are never traversed by the collector, so workers do not copy the pages they inherit.
    frozen_before = gc.get_freeze_count() > 0  # the CLI froze start-up's objects for good (memtune)
    gc.freeze()
    try:
        with multiprocessing.get_context("fork").Pool(workers, initializer=_adopt, initargs=(matcher,)) as pool:
            # Files go to workers in batches: one task per file cost ~1.5 ms of CPU each in IPC (5,120 rank logs
            # of 200 kB: 38.4 CPU-s unbatched, 30.9 batched, 28.4 in one process).
            batch = max(1, len(tasks) // (workers * 16))
            for index, result in pool.imap_unordered(_scan_one, tasks, chunksize=batch):
                results[index] = result
                if progress:
                    progress(result.bytes)
    finally:
        if not frozen_before:
            gc.unfreeze()
    return [r for r in results if r is not None]
