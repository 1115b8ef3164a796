"""What a diagnosis says of every event besides its answer: the collateral groups (each signature's ranks, hosts
and line count, however many ranks printed it) and the first MAX_TIMELINE events in the job's time. Both read each
event once and hold one small row a group or an entry (issue 23: a 131,072-rank job's collateral stays a few lines)."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from itertools import chain, compress, count, groupby, repeat
from operator import attrgetter, is_not, not_

from correlator.event_times import shifted, wall_mask
from correlator.events import Event, when
from schemas.diagnosis import CollateralGroup, TimelineEntry

MAX_TIMELINE = 100
_STALE, _SIGNATURE_ID, _RANK, _HOST, _FINDINGS, _REPEATS = (
    attrgetter("stale"), attrgetter("signature.id"), attrgetter("reporter.rank"), attrgetter("reporter.host"),
    attrgetter("findings"), attrgetter("repeats"))
_NOT_NONE = partial(is_not, None)
_BEST_ORDER = attrgetter("best.order")


def collateral_groups(failures: Sequence[Event], root_events: set[int]) -> list[CollateralGroup]:
    """Every signature's group of the events neither stale nor the answer's. Read a column at a time, in C (a
    signature's events sorted together, stably, then its reporters' ranks and hosts and its lines counted), not
    event by event in Python: every rank's timeout and reset pass here (issue 23: speed per rank). A group's ranks
    and hosts are made sets one group at a time (all of them held at once were the peak at 8,192 ranks)."""
    live = list(compress(failures, map(not_, map(_STALE, failures))))
    if root_events:
        live = list(compress(live, map(not_, map(root_events.__contains__, map(id, live)))))
    first_seen = dict.fromkeys(map(_SIGNATURE_ID, live))  # the groups in the order their first event comes
    counted: dict[str, CollateralGroup] = {}
    for sig, group in groupby(sorted(live, key=_SIGNATURE_ID), key=_SIGNATURE_ID):
        events = list(group)
        ranks = set(filter(_NOT_NONE, map(_RANK, events)))
        hosts = set(filter(_NOT_NONE, map(_HOST, events)))
        # with the lines a flood's scan left out
        lines = len(events) + sum(map(_REPEATS, chain.from_iterable(map(_FINDINGS, events))))
        counted[sig] = CollateralGroup.of(sig, [int(r) for r in ranks], [str(h) for h in hosts], lines)
        del events, ranks, hosts
    return sorted((counted[sig] for sig in first_seen), key=lambda g: -g.count)


def timeline(failures: Sequence[Event], root_events: set[int],
              offsets: Mapping[str | None, timedelta]) -> list[TimelineEntry]:
    """The first MAX_TIMELINE events by (time, line order), as sorted() orders them. Each event's key is made in C
    as it is read, none held: its time where it has a wall clock (event_times) else the end of time, its line's
    order, and its position, the tie break sorted()'s stability gives (no Python call an event: every rank's
    lines are here; issue 23)."""
    never = datetime.max.replace(tzinfo=None).astimezone()
    timed = wall_mask(failures)
    untimed = list(map(not_, timed))
    keys = chain(zip(shifted(failures, timed, offsets), map(_BEST_ORDER, compress(failures, timed)),
                     compress(count(), timed), compress(failures, timed), strict=True),
                 zip(repeat(never), map(_BEST_ORDER, compress(failures, untimed)), compress(count(), untimed),
                     compress(failures, untimed)))
    entries = []
    for *_, ev in heapq.nsmallest(MAX_TIMELINE, keys):
        role = "initiating" if id(ev) in root_events else "context" if ev.stale else "collateral"
        entries.append(TimelineEntry(time=when(ev, offsets), rank=ev.reporter.rank, host=ev.reporter.host,
                                     signature=ev.signature.id, role=role, source=ev.best.source,
                                     line=ev.best.line_no))
    return entries
