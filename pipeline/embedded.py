"""The embedded mode's queue and timer: the Dispatcher and Scheduler of one process, no Kafka, no Redis.

One worker thread runs every task in arrival order (SQLite has one writer anyway), the shards waiting in a row
together (Pipeline.accept_shards: one transaction and one completion check a job, not one a shard); a timer
thread releases correlations when they fall due by the injected clock (the Pipeline's), so a test's manual clock
decides when.

With a ScanPool (pipeline/scanpool.py), the worker thread hands each batch of shards to the pool's processes and
stores the scans that come back, oldest first, while the next batches are scanned: at most `2 * workers` batches
are out at once. Any other task waits until every batch before it is stored, so the order is the one without a
pool. A batch whose process died, or whose scan failed, is scanned here as it would be without a pool.
The messages held from their submit until they are done, and the bytes of their shards, are bounded, whether
queued, out for their scan or waiting to be stored (pipeline/backlog.py): when either is full, submit waits, then raises
RetryableError, so the HTTP ingest answers 503 and the shipper backs off instead of memory growing. A burst is
thereby scanned as it is admitted, and the last shard of a job waits behind a bounded backlog, not the whole burst.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from pipeline import metrics
from pipeline.backlog import Backlog
from pipeline.scanning import Outcome, arrival
from pipeline.scanpool import ScanPool, received
from pipeline.service import Pipeline
from schemas.clock import Clock, system_clock
from schemas.errors import FirstfaultError, RetryableError
from schemas.retry import EMBEDDED
from schemas.wire import JobEvent, LogShard
from store.dead_letters import record
from store.ports import ShardPayload

log = logging.getLogger("firstfault.embedded")
Task = Callable[[], object]
# what a dead letter keeps of a task: kind, where, payload (built when it is kept, for a shard held packed)
Letter = tuple[str, str, dict[str, Any] | Callable[[], dict[str, Any]]]
QUEUE_BYTES = 64 << 20  # packed shard data held at most (Settings.queue_bytes): 64 full shards, or a few thousand small
BATCH = 64  # shards taken off the queue at once: enough to amortize a commit, little to redo when one fails
STORE_BATCH = 256  # shards scanned by the pool stored in one transaction at most (batches that came back together)


class Item(NamedTuple):
    task: Task
    attempt: int
    letter: Letter
    shard: tuple[LogShard | ShardPayload, Mapping[str, str]] | None = None  # a shard's first attempt (batched)
    size: int = 0  # the bytes the Backlog holds for it until it is done
    admitted: bool = False  # submitted, so held by the Backlog (a retry the timer queues is not)

TICK_S = 0.5  # the timer looks at the clock at least this often: an injected clock may jump ahead
# how long the worker thread waits on the oldest batch being scanned before looking at the queue again, while the
# pool could take more: a shard queued meanwhile waits at most this, and the thread wakes 100 times a second only
# while batches are out
SCANNED_WAIT_S = 0.01


class EmbeddedRunner:
    def __init__(self, queue_size: int = 1024, put_timeout: float = 5.0,
                 clock: Clock = system_clock, scan_pool: ScanPool | None = None,
                 max_bytes: int = QUEUE_BYTES) -> None:
        self._clock = clock
        self.backlog = Backlog(max_bytes, queue_size)
        # time.time() when the newest batch's scan came back from the pool (for bench.pipeline's breakdown)
        self.scanned_at: float | None = None
        self._pool = scan_pool
        self._scanning: deque[tuple[list[Item], Future[bytes]]] = deque()  # batches out, oldest first
        self._ahead = 2 * scan_pool.workers if scan_pool is not None else 0
        self._queue: queue.Queue[Item | None] = queue.Queue()  # bounded by the backlog, which holds it and more
        self._put_timeout = put_timeout
        self._timers: list[tuple[datetime, int, Task, int, Letter]] = []
        self._timer_seq = itertools.count()
        self._wake = threading.Condition()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.pipeline: Pipeline | None = None
        # the newest permanent failures (every one is logged, and kept as a dead letter in the store)
        self.failures: deque[str] = deque(maxlen=1000)

    def bind(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    # -- Dispatcher ---------------------------------------------------------------------------------------------
    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None:
        self._put(Item(lambda: self._bound().accept_job(event, headers), 0,
                       ("job", "record_job", event.model_dump(mode="json"))))

    def submit_shard(self, shard: LogShard, headers: Mapping[str, str], data: bytes | None = None) -> None:
        # the queue holds the data as the producer packed it (the edge's `data`), not the log it inflates to (up
        # to 16 times larger): a full queue of those is what bounds this process's memory, and the worker thread
        # inflates it once, as a Celery worker does a stored payload. A shard no edge checked (`data` None) is
        # held as it is and decoded by the worker thread.
        if data is None:
            self._put(Item(lambda: self._bound().accept_shard(shard, headers), 0,
                           ("shard", "match_shard", shard.model_dump(mode="json")), (shard, headers),
                           len(shard.data)))
            return
        payload = ShardPayload.of(shard, data)
        self._put(Item(lambda: self._bound().accept_shard(payload, headers), 0,
                       ("shard", "match_shard", lambda: payload.as_shard().model_dump(mode="json")),
                       (payload, headers), len(data)))

    # -- Scheduler ----------------------------------------------------------------------------------------------
    def correlate_at(self, job_id: str, at: datetime, headers: Mapping[str, str]) -> None:
        self._at(at, lambda: self._bound().correlate(job_id, headers), 0,
                    ("correlate", "correlate_job", {"job_id": job_id}))

    # -- running ------------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._pool is not None:
            self._pool.start()
        metrics.EMBEDDED_QUEUE.set_function(self._queue.qsize)  # read at scrape time; the last runner started
        for target in (self._work, self._tick):
            thread = threading.Thread(target=target, name=f"firstfault-{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopping.set()
        with self._wake:
            self._wake.notify_all()
        self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=10)
        if self._pool is not None:
            self._pool.close()

    def idle(self) -> bool:
        with self._wake:
            return not self._timers and self._queue.unfinished_tasks == 0

    def _bound(self) -> Pipeline:
        if self.pipeline is None:
            raise RuntimeError("EmbeddedRunner.bind(pipeline) was not called")
        return self.pipeline

    def _put(self, item: Item) -> None:
        if not self.backlog.admit(item.size, self._put_timeout):
            raise RetryableError("ingest queue is full; retry shortly", retry_after=1.0)
        self._queue.put(item._replace(admitted=True))

    def _done(self, batch: list[Item]) -> None:
        """The batch's items are finished (stored, dead-lettered, or set to retry by the timer, which holds the
        retry's task from then): the queue and the backlog let them go."""
        for item in batch:
            if item.admitted:
                self.backlog.release(item.size)
            self._queue.task_done()

    def _later(self, delay: float, task: Task, attempt: int, letter: Letter) -> None:
        self._at(self._clock() + timedelta(seconds=delay), task, attempt, letter)

    def _at(self, at: datetime, task: Task, attempt: int, letter: Letter) -> None:
        with self._wake:
            heapq.heappush(self._timers, (at, next(self._timer_seq), task, attempt, letter))
            self._wake.notify_all()

    def _work(self) -> None:
        carried: Item | None = None  # taken off the queue while gathering a batch, not a shard: runs next
        while True:
            item = carried or self._take()
            carried = None
            if item is None:
                self._store_scans(until_empty=True)
                self._queue.task_done()
                return
            batch, carried = self._gather(item)
            if self._pool is not None and item.shard is not None:
                self._scan_ahead(batch)
                continue
            self._store_scans(until_empty=True)  # every batch before this task first: arrival order
            try:
                self._run_batch(batch)
            finally:
                self._done(batch)

    def _take(self) -> Item | None:
        """The next queued item; meanwhile the batches scanned are stored as they come back, oldest first."""
        while True:
            self._store_scans(until_empty=False)
            if not self._scanning:
                return self._queue.get()
            room = len(self._scanning) < self._ahead
            if room:
                try:
                    return self._queue.get_nowait()
                except queue.Empty:
                    pass
            wait([self._scanning[0][1]], timeout=SCANNED_WAIT_S if room else None)

    def _gather(self, item: Item) -> tuple[list[Item], Item | None]:
        """`item` and the shards queued right behind it (up to BATCH), and the non-shard item that ended them."""
        batch, carried = [item], None
        while item.shard is not None and len(batch) < BATCH:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                break
            if more is None or more.shard is None:
                carried = more
                if more is None:
                    self._queue.put(None)  # the stop marker was taken: leave one for after the carried
                    self._queue.task_done()
                break
            batch.append(more)
        return batch, carried

    def _scan_ahead(self, batch: list[Item]) -> None:
        assert self._pool is not None
        shards = [arrival(item.shard[0]) for item in batch if item.shard is not None]
        try:
            future = self._pool.submit(shards, self._clock().year)
            future.add_done_callback(self._scan_back)
            self._scanning.append((batch, future))
        except Exception:  # no process could start: scanned here, after the batches before it
            log.warning("the scan pool takes no batch; scanning in the runner's thread", exc_info=True)
            self._store_scans(until_empty=True)
            try:
                self._run_batch(batch)
            finally:
                self._done(batch)

    def _scan_back(self, _future: Future[bytes]) -> None:
        self.scanned_at = time.time()  # in the pool's thread: one assignment

    def _store_scans(self, until_empty: bool) -> None:
        """Store the scanned batches at the head, oldest first: every one (waiting for each), or those done. The
        batches already scanned behind the first go with it, up to STORE_BATCH shards: one transaction and one
        completion check for them all (a commit and the job's rows read cost as much as a few shards stored)."""
        while self._scanning and (until_empty or self._scanning[0][1].done()):
            batch, future = self._scanning.popleft()
            outcomes = self._received(future)
            while outcomes is not None and self._scanning and len(batch) < STORE_BATCH:
                more, after = self._scanning[0]
                if not after.done() or after.exception() is not None:  # a failed one goes alone, next
                    break
                self._scanning.popleft()
                batch, outcomes = batch + more, outcomes + received(after.result())
            try:
                self._run_batch(batch, outcomes)
            finally:
                self._done(batch)

    def _received(self, future: Future[bytes]) -> list[Outcome] | None:
        """A batch's scans, or None when its process died holding it or its scan raised (scanned here then)."""
        try:
            return received(future.result())
        except Exception as exc:
            if isinstance(exc, BrokenProcessPool) and self._pool is not None:
                self._pool.broken()
            else:
                log.warning("a scan process failed a batch; scanning it here", exc_info=True)
            return None

    def _run_batch(self, batch: list[Item], outcomes: list[Outcome] | None = None) -> None:
        """Run a batch: shards stored together (their scans `outcomes`, when the pool made them, else scanned here)."""
        shards = [item.shard for item in batch if item.shard is not None]
        if outcomes is None and (len(batch) == 1 or len(shards) != len(batch)):
            for item in batch:
                self._run(item.task, item.attempt, item.letter)
            return
        try:
            if outcomes is not None:
                self._bound().accept_scanned([shard for shard, _ in shards], outcomes,
                                             [headers for _, headers in shards])
            else:
                self._bound().accept_shards([shard for shard, _ in shards], [headers for _, headers in shards])
        except Exception:  # each alone then, with its own retries and dead letter (storing is idempotent)
            log.info("a batch of %d shards failed; taking them one by one", len(batch), exc_info=True)
            for item in batch:
                self._run(item.task, item.attempt, item.letter)

    def _run(self, task: Task, attempt: int, letter: Letter) -> None:
        try:
            task()
        except RetryableError as exc:
            if EMBEDDED.exhausted(attempt + 1):
                self._fail(f"gave up after {attempt + 1} attempts: {exc}", letter)
            else:
                self._later(EMBEDDED.delay(attempt, exc.retry_after), task, attempt + 1, letter)
        except FirstfaultError as exc:
            self._fail(str(exc), letter)
        except Exception as exc:  # a bug: keep the service up, say what happened, keep what it was given
            log.exception("task failed")
            self._fail(f"{type(exc).__name__}: {exc}", letter)

    def _fail(self, reason: str, letter: Letter) -> None:
        self.failures.append(reason)
        kind, where, kept = letter
        payload = kept() if callable(kept) else kept
        metrics.DEAD_LETTERS.labels(where).inc()
        try:
            letter_id = record(self._bound().store, kind, where, reason, payload, self._clock())
        except Exception:  # the store is failing too: the log line is all that is left of it
            log.exception("%s failed for good (%s) and its dead letter could not be kept", where, reason)
            return
        log.error("%s failed for good, dead letter #%d (firstfault dlq show %d): %s", where, letter_id, letter_id,
                  reason)

    def _tick(self) -> None:
        while not self._stopping.is_set():
            with self._wake:
                if not self._timers:
                    self._wake.wait(timeout=1.0)
                    continue
                due, _, task, attempt, letter = self._timers[0]
                wait = (due - self._clock()).total_seconds()
                if wait > 0:
                    self._wake.wait(timeout=min(wait, TICK_S))
                    continue
                heapq.heappop(self._timers)
            self._queue.put(Item(task, attempt, letter))  # not admitted: its first attempt was
