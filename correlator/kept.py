"""What one source keeps of its context records: repeats folded so that memory does not grow with the log.

Context kinds the correlator only folds into maps and sets (correlator/identity.py, prepare.mark_stale, the
`logged` ranks of diagnose): first wins (setdefault), last wins (assignment, also when guarded by a running max),
the largest line number, membership. Such a fold gives the same result over any subsequence that keeps, in
order, the first and the last occurrence of every distinct (kind, fields, speaker) row; so a source keeps only
those two of each, and NCCL's channel and sub-communicator set-up lines, printed again every few steps, stop
growing memory. Kinds read only into sets and first-wins maps (FIRST_ONLY_KINDS) need no last occurrence: they
keep their first alone (at 4,096 ranks that halves the ring and channel records). Not folded: pg_status (clock
medians), store_remote, worker_failed and table_* (line numbers and counts matter), nccl_comm_start (one
per communicator: its commId makes every line a row of its own).

`errorish` lines are kept once per (speaker, template, gravity, catalogued): the differential view weighs each
distinct template a speaker printed once, from its first occurrence, so the later repeats are only counted
(ContextRecord.repeats). A source with more distinct error templates than MAX_ERROR_ROWS keeps its earliest ones.

Kinds whose readers take one field of each record, in order, and nothing else of it but its speaker and source
(GROUPED_KINDS: SIGTERMed pids, NCCL's `Using` lines) come out of a source one record per run of its speaker: the
records of that kind a speaker printed with no other speaker's record of that kind between them, as one record
at the run's first, whose field holds the run's values in order (``members``). Every speaker and source stays
first seen where it was, so does each value in its kind's order: a torchrun agent's eight SIGTERM lines are one
record, a rank's two `Using` lines one (issue 23: memory per rank).
Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from operator import itemgetter
from types import ModuleType
from typing import Any, NamedTuple

from catalog.native import needs_setup
from catalog.native_state import KeptState
from correlator.speakers import Who

FOLDED_KINDS = frozenset({"nccl_comm", "nccl_nodes", "nccl_ring", "nccl_using", "nccl_version", "worker_sigterm",
                          "k8s_node", "k8s_assigned", "train_step", "nvrm_gpu", "nvrm_serial"})
# Folded kinds whose readers take only sets and first-wins maps (identity.py: ring ranks, interface sets,
# setdefault of addresses and nodes, SIGTERMed pids; nothing reads nccl_version; gpu_ids.py pairs a GPU's first
# naming with its serial): a row's first occurrence is all. train_step is not: its latest line is the last step.
FIRST_ONLY_KINDS = frozenset({"nccl_ring", "nccl_using", "nccl_version", "worker_sigterm", "k8s_node", "k8s_assigned",
                              "nvrm_gpu", "nvrm_serial"})
# Kinds whose records' text nothing reads once the scan is done: identity.py, naming.py, local_ranks.py,
# one_rank_hosts.py and prepare.mark_stale read their fields, speaker, source and line alone (collectives.py reads
# pg_status's text, derived.py rank_claim's, nccl_comm_start's and ckpt_saved's, the differential view errorish's).
TEXT_UNREAD_KINDS = frozenset({"nccl_comm", "nccl_nodes", "nccl_ring", "nccl_using", "nccl_version",
                               "worker_sigterm", "k8s_node", "k8s_assigned", "nvrm_gpu", "nvrm_serial"})
# kind -> the one field its readers take of each record (see members): its records are grouped by run
GROUPED_KINDS: dict[str, str] = {"worker_sigterm": "pid", "nccl_using": "detail"}
# kind -> the kind whose record ends its runs: torchrun's agent logs one teardown's SIGTERMs, then the failure that
# caused it; the next restart's teardown is another run (correlator/teardown_pids.py reads them in order)
RUN_ENDED_BY: dict[str, str] = {"worker_failed": "worker_sigterm", "spawn_exited": "worker_sigterm"}
MAX_ERROR_ROWS = 4096
Row = tuple[Any, ...]  # what makes two records of one kind the same for folding
_new_tuple = tuple.__new__
_position = itemgetter(0)  # of a kept (position, record): C, where a lambda was a Python call per record


class ContextRecord(NamedTuple):  # a tuple: faster to make and to pickle (the pool sends them by the thousand)
    kind: str
    fields: dict[str, Any]
    source: str
    line_no: int
    who: Who
    time: datetime | None
    text: str = ""
    repeats: int = 1  # for a folded errorish row: how many times its source printed it


def fold_row(kind: str, fields: dict[str, Any], who: Who) -> Row | None:
    """The row a folded kind's record is kept by, or None for a kind that is kept whole. Unsorted: a kind's fields
    are one pattern's captures, in its groups' order, so equal fields make equal rows."""
    return (kind, tuple(fields.items()), who) if kind in FOLDED_KINDS else None


class KeptContext:
    """One source's context records in line order. ``repeat`` is the cheap path for a row already kept: the
    scanner tries it first and builds a record only when it returns False. A position orders records as their
    lines stand in the source; a line's records come in the order the scanner gives them."""

    def __init__(self) -> None:
        # (position, record) in the order kept; folded row -> first record; folded row -> (position, line_no,
        # time, text) of its latest occurrence; errorish row -> [first record, times seen]; error lines of rows
        # beyond MAX_ERROR_ROWS: the fields the C loop reads and fills too (see KeptState).
        self.state = KeptState()

    @property
    def errors_dropped(self) -> int:
        return self.state.errors_dropped

    def repeat(self, kind: str, row: Row, line_no: int, time: datetime | None, text: str, position: int,
               times: int = 1) -> bool:
        """Count an occurrence of a row kept before; False when the row is new (then ``add`` its record). An
        errorish repeat is only counted, ``times`` over (line_no, time and position unused); a folded row's latest
        occurrence is the one with the greatest position, whatever order they are reported in."""
        state = self.state
        if kind == "errorish":
            seen = state.errors.get(row)
            if seen is None:
                if len(state.errors) < MAX_ERROR_ROWS:
                    return False
                state.errors_dropped += times
                return True
            seen[1] += times
            return True
        if row not in state.first:
            return False
        if kind in FIRST_ONLY_KINDS:
            return True
        last = state.last.get(row)
        if last is None or last[0] < position:
            state.last[row] = (position, line_no, time, text)
        return True

    def add(self, record: ContextRecord, row: Row | None, position: int) -> None:
        """Keep a record: of a new row (after ``repeat`` said so), or of a kind kept whole (``row`` None)."""
        state = self.state
        state.records.append((position, record))
        if row is None:
            return
        if record.kind == "errorish":
            state.errors[row] = [record, 1]
        else:
            state.first[row] = record

    def keep_line(self, contexts: list[tuple[str, dict[str, Any], Row | None]], source: str, line_no: int, who: Who,
                  time: datetime | None, text: str, at: int) -> None:
        """The records of one line: for each (kind, captures, row) of the scanner's plan, the k-th at position
        ``at + k``, a repeat of its row (see repeat) or a new record (see add). The scanner calls keep_line, which
        is this method where the C one (catalog/_linescan_kept.h, equal to this) is off (see line_keeper)."""
        for k, (kind, captures, row) in enumerate(contexts):
            if row is None or not self.repeat(kind, row, line_no, time, text, at + k):
                # tuple.__new__: a NamedTuple's own __new__ is a Python function (0.2 us more per record)
                self.add(_new_tuple(ContextRecord, (kind, captures, source, line_no, who, time, text, 1)), row,
                         at + k)

    def merge(self, later: KeptContext, lines_before: int, position_base: int) -> bool:
        """Take in what ``later`` kept of the part of this source that follows the part this one was given, as if
        this one had been given the lines of both: ``later``'s line numbers count from ``lines_before`` on, its
        positions from ``position_base`` (above any of this one's). False, and nothing taken, where that cannot be
        exact: ``later`` dropped error rows past its own MAX_ERROR_ROWS, some of which this one may hold."""
        mine, theirs = self.state, later.state
        if theirs.errors_dropped:
            return False
        error_rows = {id(first): (row, seen) for row, (first, seen) in theirs.errors.items()}
        folded_rows = {id(first): row for row, first in theirs.first.items()}
        for position, rec in theirs.records:
            position += position_base
            if (error := error_rows.get(id(rec))) is not None:
                row, seen = error
                if (known := mine.errors.get(row)) is not None:
                    known[1] += seen
                elif len(mine.errors) < MAX_ERROR_ROWS:
                    self.add(_later(rec, lines_before), row, position)
                    mine.errors[row][1] = seen
                else:
                    mine.errors_dropped += seen
                continue
            folded = folded_rows.get(id(rec))
            if folded is None:  # a record kept whole
                self.add(_later(rec, lines_before), None, position)
                continue
            row = folded
            local = position - position_base
            at, line_no, time, text = theirs.last.get(row) or (local, rec.line_no, rec.time, rec.text)
            if row not in mine.first:
                self.add(_later(rec, lines_before), row, position)
                if at == local:  # seen once in ``later``: no latest occurrence to keep
                    continue
            elif rec.kind in FIRST_ONLY_KINDS:
                continue
            mine.last[row] = (at + position_base, line_no + lines_before, time, text)
        return True

    def records(self) -> list[ContextRecord]:
        state = self.state
        counted = {id(first): seen for first, seen in state.errors.values() if seen > 1}
        kept = [(pos, rec if id(rec) not in counted else rec._replace(repeats=counted[id(rec)]))
                for pos, rec in state.records]
        if state.last:
            first = state.first
            kept += [(pos, _moved(first[row], line_no, time, text)) for row, (pos, line_no, time, text) in
                     state.last.items()]
        kept.sort(key=_position)  # stable: a line's records stay in the order they were kept
        return grouped([rec for _, rec in kept])


def grouped(records: list[ContextRecord]) -> list[ContextRecord]:
    """One source's ``records`` with each run of a GROUPED_KINDS kind's records of one speaker as one record (see
    the module's docstring), its field's values under the field's plural (``members`` reads either form)."""
    runs: dict[str, tuple[Who, list[Any], int]] = {}  # kind -> its open run: speaker, values, index in out
    out: list[ContextRecord] = []

    def close(kind: str) -> None:
        _, values, at = runs.pop(kind)
        out[at] = out[at]._replace(fields={GROUPED_KINDS[kind] + "s": tuple(values)})

    for rec in records:
        name = GROUPED_KINDS.get(rec.kind)
        if name is None:
            if (ended := RUN_ENDED_BY.get(rec.kind)) is not None and ended in runs:
                close(ended)
            out.append(rec)
            continue
        if name not in rec.fields:  # not a line of the kind's pattern: kept as it is, between runs
            if rec.kind in runs:
                close(rec.kind)
            out.append(rec)
            continue
        run = runs.get(rec.kind)
        if run is not None and run[0] == rec.who:
            run[1].extend(members(rec, name))
            continue
        if run is not None:
            close(rec.kind)
        runs[rec.kind] = (rec.who, list(members(rec, name)), len(out))
        out.append(rec)
    for kind in list(runs):
        close(kind)
    return out


def members(rec: ContextRecord, name: str, missing: Any = None) -> tuple[Any, ...]:
    """The values of ``name`` a record of a GROUPED_KINDS kind stands for: a run's (``name`` + "s": see grouped),
    or its own one (a record kept as it was printed: in a test, or in a shard stored before runs were grouped),
    ``missing`` where it has none."""
    many = rec.fields.get(name + "s")
    return tuple(many) if many is not None else (rec.fields.get(name, missing),)


needs_setup(lambda module: module.configure_kept(record_type=ContextRecord, first_only_kinds=FIRST_ONLY_KINDS,
                                                 max_error_rows=MAX_ERROR_ROWS))


def line_keeper(kept: KeptContext, module: ModuleType | None) -> Callable[..., None]:
    """keep_line(contexts, source, line_no, who, time, text, at) on ``kept`` for a scanner made now, given what
    catalog.native.linescan() said for it: C where the C loop is enabled (at 4,096 ranks 60,000 records a
    gigabyte, two Python method calls each), bound to its KeptState, else the method itself."""
    return kept.keep_line if module is None else module.keeper(kept.state)


def _later(rec: ContextRecord, lines_before: int) -> ContextRecord:
    return rec._replace(line_no=rec.line_no + lines_before) if lines_before else rec


def _moved(rec: ContextRecord, line_no: int, time: datetime | None, text: str) -> ContextRecord:
    """``rec`` at its latest occurrence."""
    return ContextRecord(rec.kind, rec.fields, rec.source, line_no, rec.who, time, text, rec.repeats)
