"""The embedded runner's scan processes: shards scanned beside the thread that stores them.

The embedded runner scanned every shard in its one worker thread, where `firstfault diagnose` scans in a pool of
processes: at 4,096 ranks two thirds of the time from a job's last shard to its incident was that scanning. Here
batches of shards go to `workers` processes, and the runner's thread stores each batch's scans, in arrival
order, while the processes scan the next ones.

The processes come from a fork server, not from forking the service: the service runs threads (the runner's, the
HTTP server's, the pool's own), and a child forked from it could inherit a lock one of them held. Each process
builds its matcher once with the factory it is given (`scan.engine.default_matcher` in the service: the catalog
and the Hyperscan database come from the cache the service itself filled, in about 50 ms). As with any fork
server, each process imports the program's main module: a program that starts the embedded service itself must
guard its own start-up (`if __name__ == "__main__":`); `firstfault serve` and `python -m` entry points do.

A batch's scans come back as one pickled bytes object, unpickled by the runner's thread (`received`) with the
cyclic collector held off (pipeline/collector.py), not by the executor's own thread as it reads the pipe: a
collection there, started by the 20,000 objects a batch of 64 shards rebuilds into, walks every scan the service
keeps for its correlations, and took more than half of reading the scans back (4,096 ranks, 5,120 shards, only
the job's own scans kept: 0.54 CPU-s with the collector, 0.24 without, `python -m bench.receive_cpu`; the more
scans of earlier jobs the service keeps, the more a full collection walks).

A process that dies (the OOM killer, a signal) breaks the pool: every batch it held comes back as an error, which
the runner scans in its own thread, and the next batch starts a new pool. No shard is lost; the one that killed a
process is scanned by the service itself then.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from catalog.matcher import Matcher
from correlator.packed import Packed, pack, unpack
from correlator.shards import ScanJSON
from pipeline.collector import collector_held_off
from pipeline.scanning import Arrival, Outcome, Scanned, Unreadable, scan_arrivals
from schemas.errors import PermanentError
from schemas.findings import Speaker

log = logging.getLogger("firstfault.scanpool")
MatcherFactory = Callable[[], Matcher]

_matcher: Matcher | None = None  # a scan process's own, built once by _init


def _init(factory: MatcherFactory) -> None:
    global _matcher
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the service's to handle: it stops the pool
    _matcher = factory()


def _pid() -> int:
    return os.getpid()


# what a scan process sends back for a shard: its scan with the result packed (correlator/packed.py), or why not
Sent = tuple[Packed, ScanJSON, float] | Unreadable


def _scan(shards: Sequence[Arrival], year: int) -> bytes:
    """The batch's list[Sent], pickled here: the executor's thread in the service then only reads bytes."""
    assert _matcher is not None, "the pool's initializer builds the matcher"
    speakers: dict[int, tuple[Any, ...]] = {}
    sent: list[Sent] = [Unreadable(PermanentError(str(out.error))) if isinstance(out, Unreadable)
                        else (pack(out.result, speakers), out.stored, out.seconds)
                        for out in scan_arrivals(_matcher, shards, year)]
    return pickle.dumps(sent, pickle.HIGHEST_PROTOCOL)


def received(message: bytes) -> list[Outcome]:
    """A batch's outcomes as a scan process sent them, rebuilt (unpickling and rebuilding make no reference
    cycles: tests/pipeline/test_scan_pool.py)."""
    with collector_held_off():
        sent: list[Sent] = pickle.loads(message)
        speakers: dict[tuple[Any, ...], Speaker] = {}
        return [out if isinstance(out, Unreadable) else Scanned(unpack(out[0], speakers, None), out[1], out[2])
                for out in sent]


def usable() -> bool:
    """Whether this platform can start scan processes from a fork server (POSIX)."""
    return "forkserver" in multiprocessing.get_all_start_methods()


class ScanPool:
    def __init__(self, workers: int, matcher: MatcherFactory) -> None:
        """`matcher` must be picklable (a module-level function) and build the matcher the Pipeline scans with."""
        self.workers, self._factory = workers, matcher
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()  # start, submit after a break and close may come from different threads

    def start(self) -> None:
        """Start every process now (the service's start-up pays their imports, not the first job's shards). A pool
        that cannot start is said, not raised: each batch then tries a new one, and is scanned in the runner's
        thread when that fails too."""
        try:
            for ready in [self._pool().submit(_pid) for _ in range(self.workers)]:
                ready.result(timeout=120)
        except Exception:
            log.warning("the scan processes did not start; batches will try again", exc_info=True)
            self._drop()

    def submit(self, shards: Sequence[Arrival], year: int) -> Future[bytes]:
        """The shards' outcomes, in order, as sent (`received` rebuilds them); the future raises BrokenProcessPool
        when a process died holding them."""
        try:
            return self._pool().submit(_scan, list(shards), year)
        except BrokenProcessPool:  # broken since the last submit: start anew once
            self._drop()
            return self._pool().submit(_scan, list(shards), year)

    def broken(self) -> None:
        """A batch came back broken. Only said: the next submit finds the pool broken and starts a new one (each of
        the broken pool's batches reports it, and dropping here could drop a pool started since)."""
        log.warning("a scan process died; its batches are scanned in the runner's thread, a new pool starts")

    def pids(self) -> list[int]:
        """The processes' ids, for tests (the executor's own table: it has no public one)."""
        pool = self._executor
        return sorted(pool._processes) if pool is not None and pool._processes else []

    def close(self) -> None:
        self._drop(wait=True)

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(self.workers, multiprocessing.get_context("forkserver"),
                                                     initializer=_init, initargs=(self._factory,))
            return self._executor

    def _drop(self, wait: bool = False) -> None:
        with self._lock:
            pool, self._executor = self._executor, None
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=True)
