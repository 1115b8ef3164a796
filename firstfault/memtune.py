"""Process-level tuning for scanning big inputs. Not part of the pure core: it touches the C library."""

from __future__ import annotations

import ctypes
import gc
import sys

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h> parameter numbers
_M_MMAP_THRESHOLD = -3


def keep_freed_blocks() -> bool:
    """Let glibc reuse freed multi-megabyte blocks instead of returning them to the kernel.

    Scanning reads 4 MiB blocks and joins each with the previous block's partial line. By default glibc serves
    such allocations with fresh mmap'd pages and unmaps them on free, so every block costs about a thousand page
    faults: 0.25 s of system time per 300 MB here, a fifth of the whole scan. Raising the mmap and trim
    thresholds makes a freed block the next one's memory; peak RSS did not change (53 MB at 305 MB). Returns
    whether it applied (glibc only; elsewhere nothing changes)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (musl, for one): keep the defaults
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 64 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD, 256 << 20))


def hand_back_freed_blocks() -> bool:
    """After the scan: glibc's own thresholds again, and the free pages of its heap handed back to the kernel.

    keep_freed_blocks' thresholds suit the scan's 4 MiB blocks, and nothing after it: correlation's tables of every
    rank (a list or a dict's table of 131,072 entries is 1-5 MB) then live in the heap, which is never trimmed
    below 256 MB free, and a freed one leaves a hole that smaller blocks reuse only in part. At 131,072 ranks the
    heap was 94 MB with 45-54 MB of it free and resident while correlation peaked (issue 23: the process tree's
    PSS). With a 128 KiB mmap threshold (glibc's initial one; setting it fixes it) each such table is mapped on its
    own and unmapped when freed, and malloc_trim(0) returns the whole free pages the scan left inside the heap.
    Returns whether it applied (glibc only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt, malloc_trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return False
    applied = bool(mallopt(_M_MMAP_THRESHOLD, 128 << 10)) and bool(mallopt(_M_TRIM_THRESHOLD, 128 << 10))
    malloc_trim(0)
    return applied


def no_collections() -> None:
    """Stop the cyclic collector for the rest of a diagnosis, and never look at what start-up built again.

    Scanning and correlating make no reference cycles: after a whole 4,096-rank job, in one process or in the
    pool, gc.collect() finds nothing unreachable (tests/unit/test_no_cycles.py keeps it so). Yet the collector
    kept walking the 120,000 findings and records a 4,096-rank job holds, and the parent's unpickling of the
    pool's results: half of the parent's 0.86 s there, and about a sixth of a `--jobs 1` scan. Reference
    counting still frees everything; memory is the same (193 MB peak RSS at 4,096 ranks). The catalog, the
    compiled matcher and the imported modules are frozen (gc.freeze): they live as long as the process. For
    the one-shot CLI only: a long-running service keeps the collector."""
    gc.freeze()
    gc.disable()
