"""When the job's events were printed, read a column at a time (issue 23: speed per rank). Pure.

``events.when`` of one event is a Python call; the steps that want the earliest or latest of every rank's lines
(the horizon before which a line is stale, the first collateral line, the job's end) or their order (the timeline)
read the times here instead: each attribute a ``map`` in C, the offsets' lookups and subtractions too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from itertools import compress, count, repeat
from operator import and_, attrgetter, eq, is_not, sub

from correlator.event import Event

_NO_OFFSET = timedelta(0)
_BEST, _TIME, _CLOCK, _REPORTER_HOST = (attrgetter("best"), attrgetter("time"), attrgetter("clock"),
                                        attrgetter("reporter.host"))


def wall_times(events: Sequence[Event], offsets: Mapping[str | None, timedelta]) -> list[datetime]:
    """``when`` of each event that carries a wall-clock time, in order, read a column at a time in C (the
    earliest or latest of every rank's lines is what most readers want; issue 23: speed per rank)."""
    return timed(events, offsets)[1]


def timed(events: Sequence[Event], offsets: Mapping[str | None, timedelta]) -> tuple[list[int], list[datetime]]:
    """The positions of the events that carry a wall-clock time, and ``when`` of each (see wall_times)."""
    bests = list(map(_BEST, events))
    wall = list(map(and_, map(is_not, map(_TIME, bests), repeat(None)), map(eq, map(_CLOCK, bests), repeat("wall"))))
    shifts = map(offsets.get, map(_REPORTER_HOST, compress(events, wall)), repeat(_NO_OFFSET))
    return list(compress(count(), wall)), list(map(sub, compress(map(_TIME, bests), wall), shifts))
