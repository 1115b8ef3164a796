"""Evidence prepared before scoring: collective lags, lines the job survived, what came before the cascade."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from itertools import compress, repeat
from operator import attrgetter, is_

from correlator.collectives import Lag, from_dumps, from_ops, from_status, from_timeouts
from correlator.event_times import wall_times
from correlator.events import Event, when
from correlator.flight_recorder import FlightDump
from correlator.identity import IdentityMap
from correlator.kept import ContextRecord
from correlator.members import CATEGORY_COMMUNICATION, ROLE_COLLATERAL, ROLE_EITHER, ROLE_INITIATING
from correlator.scoring import SKEW_TOLERANCE
from correlator.startup_retries import mark_startup_retries
from correlator.structured import Structured
from correlator.stuck_watchdogs import mark_stuck_after_timeout

_NO_OFFSET = timedelta(0)
# a consequence printed this much before the first watchdog timeout came from the fault, not from the teardown
# (more than clocks between hosts usually disagree; a watchdog waits minutes)
ABSENCE_EXPLAINED_BEFORE = timedelta(seconds=30)
_ROLE = attrgetter("role")
STALE_BEFORE = timedelta(minutes=15)  # more than a watchdog timeout (10 min) and its spread before the cascade


def collective_lags(context: Sequence[ContextRecord], structured: Sequence[Structured], failures: Sequence[Event],
                    ids: IdentityMap, world: int | None = None) -> list[Lag]:
    """Ranks that collective sequence numbers single out: progress lines, Flight Recorder dumps, odd ops, older
    or absent timeouts. ``structured``: the structured files read, in input order (release.Read); ``world``: the
    job's size where known (NCCL's nranks, the job's metadata)."""
    # by position, None for a record from_status does not read (a list: a map by index was 0.1 KB a rank)
    rank_of = [(rec.who.rank if rec.who.rank is not None else ids.rank_of(rec.who.host, rec.who.pid))
               if rec.kind == "pg_status" else None for rec in context]
    timeouts = [(ev.reporter.rank, int(ev.best.fields["seq"]), str(ev.best.fields["op"]), ev.best.source,
                 ev.best.line_no, ev.best) for ev in failures
                if ev.reporter.rank is not None and isinstance(ev.best.fields.get("seq"), int)
                and isinstance(ev.best.fields.get("op"), str)]
    dumps = [d for d in structured if isinstance(d, FlightDump)]
    lags = [*from_status(context, rank_of), *from_dumps(dumps), *from_ops(timeouts), *from_timeouts(timeouts, world)]
    return _unexplained_absences(lags, failures)


def _unexplained_absences(lags: list[Lag], failures: Sequence[Event]) -> list[Lag]:
    """An absence from the collective the others time out in, once per rank (each process group's timeouts show
    it), and not for a rank that lost a peer: a transport error of its own (a peer's reset, a remote error; NCCL
    reports those from operations in flight) not printed after the others' watchdogs fired means it was in a
    collective with the dead peer and failed on that link, while a straggler outside the collective stays
    silent until the others give up (then its teardown lines come after theirs)."""
    if not any(lag.kind == "absent" for lag in lags):
        return lags
    fired = [ev.best.time for ev in failures if ev.role is ROLE_COLLATERAL and ev.best.time is not None
             and isinstance(ev.best.fields.get("seq"), int)]
    horizon = min(fired) - ABSENCE_EXPLAINED_BEFORE if fired else None
    lost_a_peer = {ev.reporter.rank for ev in failures
                   if ev.role is ROLE_COLLATERAL and ev.reporter.rank is not None
                   and ev.signature.category is CATEGORY_COMMUNICATION and "seq" not in ev.best.fields
                   and (ev.best.time is None or (horizon is not None and ev.best.time < horizon))}
    seen: set[int] = set()
    out = []
    for lag in lags:
        if lag.kind == "absent":
            if lag.rank in seen or lag.rank in lost_a_peer:
                continue
            seen.add(lag.rank)
        out.append(lag)
    return out


def _collateral(events: Sequence[Event]) -> list[Event]:
    """The collateral events, picked in C (every rank's timeout and reset is one)."""
    return list(compress(events, map(is_, map(_ROLE, events), repeat(ROLE_COLLATERAL))))


def init_lines(context: Sequence[ContextRecord]) -> dict[str, int]:
    """Each source's last NCCL init line (what mark_stale reads of the init records: read early, the records can
    be let go of before the events are built; issue 23)."""
    inits: dict[str, int] = {}
    for rec in context:
        if rec.kind == "nccl_comm":
            inits[rec.source] = max(inits.get(rec.source, 0), rec.line_no)
    return inits


def mark_stale(failures: Sequence[Event], offsets: Mapping[str | None, timedelta], inits: Mapping[str, int],
               running: Iterable[ContextRecord] = ()) -> None:
    """Lines the job carried on after are context, not candidates: a non-initiating line followed on the same
    rank by a completed NCCL init (a store retry at start-up; ``inits``: init_lines), or printed long before the
    consequences began; and a store connect retry the job's running followed (``running``: pg_status and
    train_step records; correlator/startup_retries.py)."""
    first = min(wall_times(_collateral(failures), offsets), default=None)
    horizon = first - STALE_BEFORE if first is not None else None
    for ev in failures:
        if ev.role is ROLE_INITIATING or ev.weight is not None:
            continue
        printed = when(ev, offsets)
        survived = ev.role is ROLE_EITHER and inits.get(ev.best.source, 0) > ev.best.line_no
        ev.stale = survived or (horizon is not None and printed is not None and printed < horizon)
    mark_startup_retries(failures, running, inits, offsets)
    mark_stuck_after_timeout(failures)


def before_cascade(context: Sequence[ContextRecord], failures: Sequence[Event],
                    offsets: Mapping[str | None, timedelta]) -> list[ContextRecord]:
    """Uncatalogued error lines printed before the consequences started: earlier than the first collateral line
    (clocks corrected), or, without a clock, earlier in their file than that file's first collateral line.
    Lines a specific catalog entry matched are weighed as what they are, not as unknowns."""
    collateral = _collateral(failures)
    first = min(wall_times(collateral, offsets), default=None)
    start = first + SKEW_TOLERANCE if first is not None else None
    first_line: dict[str, int] = {}
    for ev in collateral:
        first_line[ev.best.source] = min(first_line.get(ev.best.source, ev.best.line_no), ev.best.line_no)
    early = []
    for rec in context:
        if rec.kind != "errorish":
            continue
        if rec.time is not None and start is not None:
            if rec.time - offsets.get(rec.who.host, _NO_OFFSET) <= start:
                early.append(rec)
        elif rec.line_no < first_line.get(rec.source, 1 << 62):
            early.append(rec)
    if not early:
        return early
    # the early lines a catalogued finding is on, looked up from them: a set of every finding's line was the
    # largest thing this step held (issue 23: 4.6 findings a rank at 8,192 ranks, fewer early lines)
    lines = {(rec.source, rec.line_no) for rec in early}
    known = {key for ev in failures for f in ev.findings if not f.generic and (key := (f.source, f.line_no)) in lines}
    return [rec for rec in early if (rec.source, rec.line_no) not in known]

