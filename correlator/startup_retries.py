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

from correlator.events import Event
from correlator.kept import ContextRecord
from correlator.scoring import SKEW_TOLERANCE
from schemas.findings import Role

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
    marks = [Mark(ev.best.source, ev.best.line_no, _when(ev.best.time, ev.best.clock == "wall", ev.reporter.host,
                                                          offsets))
             for ev in failures if isinstance(ev.best.fields.get("seq"), int)]
    marks += [Mark(rec.source, rec.line_no, _when(rec.time, True, rec.who.host, offsets)) for rec in records]
    return marks


def mark_startup_retries(failures: Sequence[Event], records: Iterable[ContextRecord], inits: Mapping[str, int],
                         offsets: Mapping[str | None, timedelta]) -> None:
    """Set ``stale`` on each connect retry the job ran after and had not run before (module docstring).
    ``records``: pg_status and train_step records; ``inits``: each source's last NCCL init line (prepare.init_lines)."""
    marks = [*running_marks(failures, records, offsets), *(Mark(src, line, None) for src, line in inits.items())]
    if not marks:
        return
    for ev in failures:
        if (ev.signature.id != CONNECT_RETRY or "errno" not in ev.best.fields or ev.role is not Role.EITHER
                or ev.weight is not None or ev.stale):
            continue
        at = Mark(ev.best.source, ev.best.line_no,
                  _when(ev.best.time, ev.best.clock == "wall", ev.reporter.host, offsets))
        if any(_before(at, m) for m in marks) and not any(_before(m, at) for m in marks):
            ev.stale = True


def _before(a: Mark, b: Mark) -> bool:
    """a was printed before b: earlier in one file, or earlier by more than clocks disagree."""
    if a.source == b.source:
        return a.line_no < b.line_no
    return a.time is not None and b.time is not None and a.time + SKEW_TOLERANCE < b.time


def _when(time: datetime | None, wall: bool, host: str | None, offsets: Mapping[str | None, timedelta]
          ) -> datetime | None:
    return time - offsets.get(host, _NO_OFFSET) if time is not None and wall else None
