"""The cyclic garbage collector held off around work that allocates many objects and makes no reference cycles.

A service process keeps the scans of its latest jobs (pipeline/recent.py: 400,000 objects with two 4,096-rank
jobs). Work that allocates enough starts collections, and the full ones walk every object the process holds;
what the work makes without cycles is freed by reference counting whatever the collector does. Used by the
correlation (merge and diagnose) and by the embedded runner's thread as it reads back and stores a batch of
scans (pipeline/embedded.py); anything a store call leaves in a cycle meanwhile waits for the next collection
after it, which is all holding off delays.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_held_off() -> Iterator[None]:
    """The cyclic collector held off for the block.

    A correlation allocates enough to start a full collection, which walks every scan kept: 0.79 CPU-s for a
    4,096-rank correlation with one, 0.54 without (bench.correlate_cpu; docs/performance.md, "The service").
    Merging and diagnosing make no reference cycles (tests/unit/test_no_cycles.py,
    tests/pipeline/test_service.py), so reference counting frees all they drop. Nested or concurrent holders:
    only the one that turned it off turns it on."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
