"""One large log file scanned in pieces by several processes, with the result one process gives.

A Slurm job's output is most often one file holding every rank (``srun -l``). The pool (scan/pool.py) scans files
side by side; this cuts one file into pieces of whole lines and scans them side by side, then puts them together:

- Where the cuts are. One process reads a file in blocks of ``block`` bytes (sources.files.CHUNK) and scans up to
  the last newline of each (its buffer); what it looks back at from a line (the owner of an indented line, the
  lines between two parts of a traceback: correlator/continuation.py) never reaches before its buffer. A piece
  starts where such a buffer starts, after the last newline of a block, and is read in the same blocks: every
  buffer a piece's scanner sees is one the single process saw, so each line reads the same.
- What a piece's scanner keeps is what depends on its own lines only: context records folded (merged in order:
  KeptContext.merge) and its signature lines, unfolded. The parent folds those in the file's order through one
  HeldFindings, so event boundaries across a cut, the finding held back at a piece's end, the rows of repeated
  context lines and the flood counts are those of one pass. A piece's first signature line may continue an event
  of an earlier piece: its worker records, for each gap the continuation allows, whether the lines between read
  as one traceback (within its buffer, as the single process read them), and the parent decides with the real
  previous line.
- Line numbers, the finding order, record positions and byte counts are counted per piece and offset in the merge.

Split only when it pays: at least SPLIT_MIN_BYTES to scan, more than one process, fork available. A plain file
is read at any offset; a zstd file of several frames whose headers give their sizes is read from the frame that
holds a piece's start (sources/ranges.py). A gzip file (even of several members: where one ends is known only
by inflating it), a zstd file of one frame (what `zstd FILE` writes) or without frame sizes (compressed from a
pipe) is one stream, read from its start by one process. So is a file whose head is a Flight Recorder dump or a
job's metadata (sniffed whole, as one process does). A piece that dropped error rows past MAX_ERROR_ROWS cannot
be merged exactly (the rows it dropped may be ones an earlier piece kept, and counts): then one process scans the
file again.
"""

from __future__ import annotations

import gc
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from catalog.matcher import Matcher
from correlator.continuation import MAX_EVENT_GAP, lines_between_continue
from correlator.flight_recorder import looks_like_dump
from correlator.floods import MAX_IN_EVENT, in_event_key
from correlator.held import HeldFindings, SignatureLine
from correlator.kept import KeptContext
from correlator.reading import SourceResult, SourceScanner
from correlator.speakers import who_from_path
from correlator.structured import Sniffer, looks_like_job
from schemas.errors import UsageError
from sources.files import CHUNK, Source, _read_errors
from sources.ranges import ZSTD_SUFFIXES, RangeReader, range_reader

SPLIT_MIN_BYTES = 64 << 20  # below this a file is scanned in under half a second: forking and merging cost more
PIECES_PER_WORKER = 4  # a worker that finishes early takes another piece
_BACK = 64 << 10  # read back from a block's end this much at a time to find its last newline
_POSITIONS = 96  # a piece's record positions are put above every earlier piece's: index << 96
MAX_PIECE_LINES = 1 << 16  # signature lines a piece sends at most (the 427 MB 512-rank file sends 8,188 in all)


@dataclass(frozen=True)
class Piece:
    index: int
    start: int  # offset of its first line: just after the last newline of a block, or 0
    end: int  # offset just after its last newline, or the file's end


@dataclass
class PieceResult:
    """What a worker sends of one piece: its signature lines (see _PieceScanner), its context records folded."""

    index: int
    lines: int
    bytes: int
    signature_lines: list[tuple[Any, ...]]  # each with how many certain drops came just before it (see below)
    kept: KeptContext
    last_event: tuple[int, Any] | None  # (line_no, who) of its last signature line, sent or not
    dropped_after: int  # certain drops after its last line sent
    overflow: bool = False  # more than MAX_PIECE_LINES to send: not sent, the file goes to one process


def split_workers(source: Source, jobs: int | None) -> int:
    """How many processes scan ``source`` in pieces: 1 (do not split) for one core, no fork, stdin, a stream read
    from its start (gzip; zstd in one frame or without frame sizes: sources/ranges.py) or less than
    SPLIT_MIN_BYTES to scan."""
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if jobs < 2 or source.path is None or not hasattr(os, "fork"):
        return 1
    if os.path.splitext(os.fspath(source.path))[1] not in ZSTD_SUFFIXES and source.length() < SPLIT_MIN_BYTES:
        return 1  # a plain file's size is known without opening it: most files stop here
    found = range_reader(os.fspath(source.path))
    return jobs if found is not None and found[1] >= SPLIT_MIN_BYTES else 1


def pieces(reader: RangeReader, size: int, count: int, block: int = CHUNK) -> list[Piece]:
    """About ``count`` pieces of a file of ``size`` bytes, cut where a single reader's buffers begin (``block``)."""
    step = max(1, -(-size // (count * block))) * block  # a whole number of blocks per piece
    starts = [0]
    for cut in range(step, size, step):
        start = _buffer_start(reader, cut, block)
        if start is not None and start > starts[-1] and start < size:
            starts.append(start)
    ends = [*starts[1:], size]
    return [Piece(i, start, end) for i, (start, end) in enumerate(zip(starts, ends, strict=True))]


def _buffer_start(reader: RangeReader, cut: int, block: int) -> int | None:
    """Where the single reader's next buffer begins once it has read up to ``cut``: just after the last newline of
    the block that ends at ``cut``; None when that block holds no newline (a line runs through it)."""
    end = cut
    while end > cut - block:
        begin = max(cut - block, end - _BACK)
        found = reader.pread(end - begin, begin).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        end = begin
    return None


def _blocks(reader: RangeReader, piece: Piece, block: int) -> Iterator[bytes]:
    """A piece's bytes as a single reader is given them: the single reader holds the piece's first bytes, to the
    end of their block, as the carry it puts before the next block, so the first read here runs to that next
    block's end; then whole blocks, the last cut at the piece's end."""
    at = piece.start
    stop = (-(-at // block) + 1) * block
    while at < piece.end:
        data = reader.pread(min(stop, piece.end) - at, at)
        if not data:
            return
        yield data
        at += len(data)
        stop = at + block


class _NoSniff(Sniffer):
    """The parent checked the file's head: no piece is a Flight Recorder dump or a job's metadata."""

    def feed(self, chunk: bytes) -> None:
        return None

    def finish(self) -> None:
        return None


class _Overflow(Exception):
    pass


class _PieceScanner(SourceScanner):
    """Scans one piece; keeps its signature lines for the parent's HeldFindings instead of folding them, each with
    whether it continues the event of the one before (for the piece's first: the gaps across which it would).

    Except the certain drops: a signature's 18th line and later within one event about one rank, host or peer (a
    rank printing the same timeout line on and on: one event; floods.in_event_key). HeldFindings keeps at most
    MAX_IN_EVENT of those lines in an event after its first line, whatever came before, and a line that deep in an
    event resolves no held line; what it changes, the order count and the last line's place, the parent is told
    (dropped counts, last_event). Past MAX_PIECE_LINES lines to send (floods of one-line events), the piece gives
    up: see PieceResult.overflow."""

    def __init__(self, matcher: Matcher, name: str, year: int) -> None:
        super().__init__(matcher, name, who_from_path(name), year, 0, fold_context=True)
        self._structured = _NoSniff(name, None)
        self.signature_lines: list[tuple[Any, ...]] = []
        self._in_event: dict[tuple[Any, ...], int] = {}  # in_event_key -> its lines in the current event (a lower
        # bound: see above)
        self._dropped = 0  # certain drops since the last line sent

    def _signature_line(self, buffer: bytes, start: int, line: SignatureLine) -> None:
        sig, text, fields, said, line_no, stamp, who = line
        if self._held.last_event is not None:
            continues: bool | frozenset[int] = self._continues_event(buffer, start, line_no, who)
        else:  # a line up to MAX_EVENT_GAP back may be in an earlier piece: its gap is line_no or more
            continues = frozenset(gap for gap in range(max(2, line_no), MAX_EVENT_GAP + 1)
                                  if lines_between_continue(buffer, start, gap))
        self._held.last_event = (line_no, who)  # what _continues_event reads
        if continues is not True:
            self._in_event.clear()
        key = in_event_key(sig.id, fields)
        seen = self._in_event[key] = self._in_event.get(key, 0) + 1
        if seen > MAX_IN_EVENT + 1:
            self._dropped += 1
            return
        if len(self.signature_lines) >= MAX_PIECE_LINES:
            raise _Overflow
        self.signature_lines.append((sig.id, text, fields, said, line_no, stamp, who, continues, self._dropped))
        self._dropped = 0

    def piece_result(self, index: int) -> PieceResult:
        if self._carry:  # the file's last line, with no newline
            self._process(self._carry, advance=True)
            self._carry = b""
        return PieceResult(index, self.result.lines, self.result.bytes, self.signature_lines, self._context,
                           self._held.last_event, self._dropped)


def scan_piece(matcher: Matcher, name: str, path: str, year: int, block: int, piece: Piece) -> PieceResult:
    """One piece of the file at ``path`` (named ``name``), read as a single reader of ``block`` bytes reads it."""
    scanner = _PieceScanner(matcher, name, year)
    found = range_reader(path)
    if found is None:
        raise UsageError(f"{name}: can no longer be read in pieces (changed while it was read?)")
    try:
        reader = found[0]()
    except OSError as exc:
        raise UsageError(f"{name}: {exc.strerror or exc}") from exc
    try:
        for data in _blocks(reader, piece, block):
            scanner.feed(data)
    except _read_errors() as exc:
        raise UsageError(f"{name}: cannot read: {exc}") from exc
    except _Overflow:
        return PieceResult(piece.index, 0, 0, [], KeptContext(), None, 0, overflow=True)
    finally:
        reader.close()
    return scanner.piece_result(piece.index)


_shared: dict[str, Any] = {}  # what forked workers inherit: scan_piece's arguments but the piece


def _scan_shared(piece: Piece) -> PieceResult:
    return scan_piece(piece=piece, **_shared)


def merge(matcher: Matcher, name: str, order_base: int, parts: Iterator[PieceResult]) -> SourceResult | None:
    """The pieces' results, in file order, as one SourceResult; None where a piece cannot be merged exactly."""
    held = HeldFindings(name, order_base, fold_context=True)
    kept = KeptContext()
    lines = size = 0
    signatures = matcher.catalog.get
    for part in parts:
        if part.overflow:
            return None
        for sig_id, text, fields, said, line_no, stamp, who, continues, dropped in part.signature_lines:
            held.skip(dropped)
            line_no += lines
            if isinstance(continues, frozenset):
                last = held.last_event
                gap = line_no - last[0] if last is not None else 0
                continues = last is not None and last[1] == who and (gap == 1 or gap in continues)
            signature = signatures(sig_id)
            assert signature is not None, sig_id  # the parent's catalog is the workers'
            held.add((signature, text, fields, said, line_no, stamp, who), continues)
        held.skip(part.dropped_after)
        if part.last_event is not None:
            held.last_event = (part.last_event[0] + lines, part.last_event[1])
        if not kept.merge(part.kept, lines, part.index << _POSITIONS):
            return None
        lines += part.lines
        size += part.bytes
    return SourceResult(name, held.finish(), kept.records(), lines, size)


def _structured(reader: RangeReader) -> bool:
    head = reader.pread(1 << 16, 0)
    return looks_like_dump(head) or looks_like_job(head)


def scan_split(matcher: Matcher, source: Source, year: int, order_base: int, workers: int,
               progress: Callable[[int], None] | None = None, block: int = CHUNK,
               per_worker: int = PIECES_PER_WORKER) -> SourceResult | None:
    """``source`` scanned in pieces by ``workers`` processes; None when it is not worth it or cannot be exact
    (a structured file, a file of one piece, a piece past MAX_ERROR_ROWS): then one process scans it."""
    assert source.path is not None
    path = os.fspath(source.path)
    found = range_reader(path)
    if found is None:
        return None
    reader = found[0]()
    try:
        if _structured(reader):
            return None
        plan = pieces(reader, found[1], workers * per_worker, block)
    finally:
        reader.close()
    if len(plan) < 2:
        return None
    _shared.update(matcher=matcher, name=source.name, path=path, year=year, block=block)
    frozen_before = gc.get_freeze_count() > 0
    gc.freeze()  # the workers' collector then never touches (and copies) the pages they inherit
    try:
        import multiprocessing  # only when a pool runs: `diagnose` starts sooner
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(workers, len(plan)), context, initializer=_ignore_interrupts) as pool:
            try:
                merged = merge(matcher, source.name, order_base, _reported(pool.map(_scan_shared, plan), progress))
            except BrokenProcessPool:  # a worker died (the OOM killer, a signal): one process scans the file
                merged = None
            if merged is None:
                pool.shutdown(cancel_futures=True)  # the pieces not begun are not scanned for nothing
            return merged
    finally:
        _shared.clear()
        if not frozen_before:
            gc.unfreeze()


def _reported(parts: Iterator[PieceResult], progress: Callable[[int], None] | None) -> Iterator[PieceResult]:
    for part in parts:
        if progress:
            progress(part.bytes)
        yield part


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the pool


__all__: Sequence[str] = ["SPLIT_MIN_BYTES", "Piece", "PieceResult", "merge", "pieces", "scan_piece", "scan_split",
                           "split_workers"]
