"""A TCPStore connect retry the job started after is a transient of start-up, not the cause of a later failure.

c10d's client socket (pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp, SocketConnectOp::tryConnect) warns
"The client socket has failed to connect to [host]:port (errno: N - ...)." for an address it could not reach
(recordError's C10D_WARNING: "[W socket.cpp:663]" in older releases, glog-style "[W1129 10:00:01.123456789
socket.cpp:697]" later, "[rankN]:" in front later still) and goes on until the store's timeout. Only that line is
read here: "failed to connect to any network address of (host, port)" is run()'s C10D_ERROR once every address
failed, thrown as SocketError/DistNetworkError, and is left to the other rules. A client connects only when its
TCPStore is built: at start-up, or at an elastic restart's new rendezvous. So a retry that the job's running
follows (a collective with a sequence number, NCCL's communicator init, ProcessGroupNCCL's status, a training
step) connected in the end: the process group those need is built over that store. A retry after which nothing
of the job running is printed (the store host really died) stays a candidate; so does one printed after the job
had already been running (a restart's rendezvous, whose store may be what failed).
Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from correlator.events import Event, when
from correlator.kept import ContextRecord
from correlator.members import ROLE_EITHER
from correlator.scoring import SKEW_TOLERANCE

CONNECT_RETRY = "pytorch.store.connect_failed"
_NO_OFFSET = timedelta(0)


class Mark(NamedTuple):
    """One line that shows the job running: where it was printed and, with a wall clock, when (offset-corrected)."""
    source: str
    line_no: int
    time: datetime | None


def running_marks(failures: Sequence[Event], records: Iterable[ContextRecord],
                  offsets: Mapping[str | None, timedelta]) -> list[Mark]:
    """Lines printed only once the process group existed: a failure about a numbered collective (the watchdog's
    WorkNCCL(SeqNum=N)), and the context records of ``records`` (NCCL inits, pg_status, training steps)."""
    marks = [Mark(ev.best.source, ev.best.line_no, when(ev, offsets))
             for ev in failures if isinstance(ev.best.fields.get("seq"), int)]
    marks += [Mark(rec.source, rec.line_no, _when(rec, offsets)) for rec in records]
    return marks


def mark_startup_retries(failures: Sequence[Event], records: Iterable[ContextRecord], inits: Mapping[str, int],
                         offsets: Mapping[str | None, timedelta]) -> None:
    """Set ``stale`` on each connect retry the job ran after and had not run before (module docstring).
    ``records``: pg_status and train_step records; ``inits``: each source's last NCCL init line (prepare.init_lines).
    Linear: every rank of a large job may retry while the store's host starts, so each retry is weighed against
    the marks' first and last line in its file and their first and last wall-clock time, not against every mark."""
    retries = [ev for ev in failures if ev.signature.id == CONNECT_RETRY and "errno" in ev.best.fields
               and ev.role is ROLE_EITHER and ev.weight is None and not ev.stale]
    if not retries:  # the common case: no mark is made at all
        return
    span = _Span()
    for mark in running_marks(failures, records, offsets):
        span.add(mark)
    for source, line in inits.items():
        span.add(Mark(source, line, None))
    for ev in retries:
        at = Mark(ev.best.source, ev.best.line_no, when(ev, offsets))
        if span.any_after(at) and not span.any_before(at):
            ev.stale = True


class _Span:
    """The first and last line of the marks in each file, and their earliest and latest wall-clock time."""

    def __init__(self) -> None:
        self.lines: dict[str, tuple[int, int]] = {}
        self.first: datetime | None = None
        self.last: datetime | None = None

    def add(self, m: Mark) -> None:
        low, high = self.lines.get(m.source, (m.line_no, m.line_no))
        self.lines[m.source] = (min(low, m.line_no), max(high, m.line_no))
        if m.time is not None:
            self.first = m.time if self.first is None else min(self.first, m.time)
            self.last = m.time if self.last is None else max(self.last, m.time)

    def any_after(self, at: Mark) -> bool:
        """A mark printed after ``at``: later in its file, or later by more than clocks disagree."""
        lines = self.lines.get(at.source)
        return (lines is not None and lines[1] > at.line_no) or (
            at.time is not None and self.last is not None and at.time + SKEW_TOLERANCE < self.last)

    def any_before(self, at: Mark) -> bool:
        """A mark printed before ``at``: earlier in its file, or earlier by more than clocks disagree."""
        lines = self.lines.get(at.source)
        return (lines is not None and lines[0] < at.line_no) or (
            at.time is not None and self.first is not None and self.first + SKEW_TOLERANCE < at.time)


def _when(rec: ContextRecord, offsets: Mapping[str | None, timedelta]) -> datetime | None:
    """A context record's time by the job's clock (prepare.before_cascade's reading of a record's stamp)."""
    return rec.time - offsets.get(rec.who.host, _NO_OFFSET) if rec.time is not None else None
