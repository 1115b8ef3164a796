"""Scanning many files in several processes, the parent among them. Every process claims batches of files from
one shared counter and scans them with the parent's matcher; the workers send their SourceResults back, and the
parent puts all of them in input order, so the diagnosis is the one a single process makes.

The parent scans too (``workers - 1`` children): what it scans itself is never pickled. At 4,096 ranks sending
results back cost a third of the scan phase when every core ran a child, and the parent's unpickling competed
with them for the cores. Batches are claimed, not dealt: a process slowed by receiving takes fewer.

Workers send each batch's results at once, their findings and context records as plain tuples
(correlator/packed.py).

Workers are forked: they inherit the compiled matcher (Hyperscan database, scratch, compiled regexes) instead of
building their own or receiving it pickled. Where fork does not exist, the caller scans in-process.
"""

from __future__ import annotations

import gc
import multiprocessing
import pickle
import signal
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no fork either, so the pool is not used
    fcntl = None  # type: ignore[assignment]

from catalog.matcher import Matcher
from correlator.interned import Interner
from correlator.packed import pack, unpack
from correlator.reading import SourceResult
from scan.source import order_base, scan_source
from schemas.findings import Speaker
from sources.files import Source, chunks

Task = tuple[int, Source, int, int]  # (index in the input, source, year, order base)
MAX_BATCH = 256  # files a batch holds at most (see scan_in_pool)
_Listed = tuple[int, str, str | None, int | None]  # a task as its batch's bytes hold it: index, name, path, size


def _widen(pipe: Connection) -> None:
    """Let the pipe hold a whole batch's results: 4 MiB where allowed, else Linux's pipe-max-size (1 MiB by
    default). With the default 64 KiB a worker waited on each 64 KiB until the parent's receiver thread got the
    GIL back from the parent's own scanning (up to the 5 ms switch interval each time): at 4,096 ranks the scan
    phase took 1.41 s with it, 1.29 s without."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setsize is None:
        return
    for size in (4 << 20, 1 << 20):
        try:
            fcntl.fcntl(pipe.fileno(), setsize, size)
            return
        except OSError:  # above pipe-max-size (EPERM): try the default maximum
            continue


def _claim(counter: Any, count: int) -> int | None:
    """The next unclaimed batch, or None when every batch is taken."""
    with counter.get_lock():
        claimed = int(counter.value)
        if claimed >= count:
            return None
        counter.value = claimed + 1
    return claimed


def _scan(matcher: Matcher, batch: Sequence[Task]) -> list[tuple[int, SourceResult]]:
    return [(index, scan_source(matcher, source.name, chunks(source), year, base))
            for index, source, year, base in batch]


def _sealed(batch: Sequence[Task]) -> bytes:
    """A batch as one bytes object, its sources as plain values. A forked worker that read the parent's own
    Source objects and task tuples wrote their reference counts, and so copied every page they sat on: at
    131,072 ranks (163,840 files) the worker ended the scan at about 105 MB of the tree's PSS. Reading a bytes
    object's contents writes nothing to it (issue 23: memory per rank)."""
    listed: list[_Listed] = [(index, source.name, source.path, source.size) for index, source, _, _ in batch]
    return pickle.dumps(listed, protocol=pickle.HIGHEST_PROTOCOL)


def _opened(sealed: bytes | None, year: int) -> list[Task]:
    """The tasks of a _sealed batch, as new objects of the process that reads them (none once let go of: its
    results are in)."""
    listed: list[_Listed] = pickle.loads(sealed) if sealed is not None else []
    return [(index, Source(name, path, size), year, order_base(index)) for index, name, path, size in listed]


Packed = tuple[int, SourceResult, list[tuple[Any, ...]], list[tuple[Any, ...]]]
# (index, the result without its records and findings, the records, the findings): correlator/packed.py


def _packed(results: list[tuple[int, SourceResult]]) -> list[Packed]:
    """A batch's results as a worker sends them, each as plain tuples (correlator/packed.py)."""
    speakers: dict[int, tuple[Any, ...]] = {}
    return [(index, *pack(result, speakers)) for index, result in results]


def _work(matcher: Matcher, batches: Sequence[bytes | None], year: int, counter: Any, out: Connection) -> None:
    """A worker: scan claimed batches (_sealed) until none is left, sending each batch's results; then "done"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    try:
        while (claimed := _claim(counter, len(batches))) is not None:
            out.send(("batch", (claimed, _packed(_scan(matcher, _opened(batches[claimed], year))))))
        out.send(("done", None))
    except Exception as exc:  # sent to the parent, which raises it: a bad file fails as in one process
        for report in (exc, RuntimeError(f"{type(exc).__name__}: {exc}")):  # the text, if it cannot be pickled
            try:
                out.send(("error", report))
                break
            except OSError:  # the parent stopped reading: nobody to tell
                break
            except Exception:
                continue
    finally:
        out.close()


class _Receiver(threading.Thread):
    """Reads the workers' results as they come, so that no worker waits on a full pipe while the parent scans."""

    def __init__(self, readers: list[Connection], results: list[SourceResult | None], stop: Callable[[], None],
                 interner: Interner, names: Sequence[Source], batches: list[bytes | None]) -> None:
        super().__init__(daemon=True)
        self._readers = readers
        self._results = results
        self._stop = stop  # called on a worker's error: no process claims another batch
        self.errors: list[BaseException] = []
        self._speakers: dict[tuple[Any, ...], Speaker] = {}  # one Speaker per speaker, as the worker had
        self._interner = interner
        self._names = names  # each result's source name is its Source's, not a second copy of it
        self._batches = batches  # a batch is let go of once its results are in
        self.received = 0  # bytes of input the workers' results cover, not yet reported (see take_bytes)
        self._lock = threading.Lock()

    def run(self) -> None:
        open_readers = list(self._readers)
        while open_readers:
            for reader in wait(open_readers):
                assert isinstance(reader, Connection)
                try:
                    kind, payload = reader.recv()
                    if kind == "batch":
                        claimed, payload = payload
                        payload = [(index, self._unpacked(index, packed)) for index, *packed in payload]
                        self._batches[claimed] = None
                except (EOFError, OSError):  # the worker ended, done or not (killed: the parent rescans)
                    open_readers.remove(reader)
                    continue
                except Exception as exc:  # results that do not unpickle: raised in the parent; closing the pipe
                    self.errors.append(exc)  # ends the worker at its next send, so that nobody waits on it
                    self._stop()
                    reader.close()
                    open_readers.remove(reader)
                    continue
                if kind == "batch":
                    for index, result in payload:
                        self._results[index] = result
                    with self._lock:
                        self.received += sum(result.bytes for _, result in payload)
                elif kind == "error":
                    self.errors.append(payload)
                    self._stop()

    def _unpacked(self, index: int, packed: list[Any]) -> SourceResult:
        result, records, found = packed
        result.source = self._names[index].name  # the same text (the worker read it from there), not a copy
        return unpack((result, records, found), self._speakers, self._interner)

    def take_bytes(self) -> int:
        with self._lock:
            taken, self.received = self.received, 0
        return taken


def scan_in_pool(matcher: Matcher, sources: list[Source], year: int, workers: int,
                 progress: Callable[[int], None] | None = None) -> list[SourceResult] | None:
    """The results of every source in input order (``workers`` processes, the parent one of them), or None when
    this platform cannot fork."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    # Largest files first, so that no process is left with a big file at the end while the others idle.
    sizes = [s.length() for s in sources]
    order = sorted(range(len(sources)), key=lambda i: -sizes[i])
    tasks = [(i, sources[i], year, order_base(i)) for i in order]
    # Batches, not single files: a message per file cost ~1.5 ms of CPU each (5,120 rank logs of 200 kB). At most
    # MAX_BATCH files: a worker holds a batch's results and their pickle at once, and keeps the memory they took
    # (at 32,768 ranks, in batches of 1,280 files, a worker ended the scan at 82 MB of the tree's 342; at 56 in 256).
    size = max(1, min(MAX_BATCH, len(tasks) // (workers * 16)))
    batches: list[bytes | None] = [_sealed(tasks[k : k + size]) for k in range(0, len(tasks), size)]
    del tasks, order  # the batches hold them
    results: list[SourceResult | None] = [None] * len(sources)
    context = multiprocessing.get_context("fork")
    counter = context.Value("q", 0)
    interner = Interner()  # one for the receiver thread and this one: dict.setdefault holds the GIL throughout

    def stop() -> None:
        with counter.get_lock():
            counter.value = len(batches)

    # Frozen objects are never traversed by the collector, so workers do not copy the pages they inherit.
    frozen_before = gc.get_freeze_count() > 0  # the CLI froze start-up's objects for good (memtune)
    gc.freeze()
    children: list[Any] = []
    readers: list[Connection] = []
    receiver: _Receiver | None = None
    try:
        for _ in range(workers - 1):
            reader, writer = context.Pipe(duplex=False)
            _widen(writer)
            child = context.Process(target=_work, args=(matcher, batches, year, counter, writer), daemon=True)
            child.start()
            writer.close()  # the child's copy is the one that stays open
            children.append(child)
            readers.append(reader)
        receiver = _Receiver(readers, results, stop, interner, sources, batches)
        receiver.start()
        while (claimed := _claim(counter, len(batches))) is not None:
            mine, batches[claimed] = _opened(batches[claimed], year), None
            for index, result in _scan(matcher, mine):
                result.source = sources[index].name  # as the receiver does
                results[index] = interner.result(result)
                if progress:
                    progress(result.bytes + receiver.take_bytes())
    except BaseException:
        for child in children:
            child.terminate()
        raise
    finally:
        if receiver is not None:
            receiver.join()  # until every worker's pipe is closed: finished, failed or terminated
        for child in children:
            child.join()
        for reader in readers:
            reader.close()
        if not frozen_before:
            gc.unfreeze()
    assert receiver is not None
    if receiver.errors:
        raise receiver.errors[0]
    if progress:
        progress(receiver.take_bytes())
    # A worker that died (the kernel's OOM killer, a signal) sent no results for its last batch: scan those here.
    lost = [task for sealed in batches for task in _opened(sealed, year) if results[task[0]] is None]
    for index, result in _scan(matcher, lost):
        result.source = sources[index].name
        results[index] = interner.result(result)
        if progress:
            progress(result.bytes)
    return [r for r in results if r is not None]
