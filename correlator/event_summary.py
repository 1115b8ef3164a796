"""What a diagnosis says of every event besides its answer: the collateral groups (each signature's ranks, hosts
and line count, however many ranks printed it) and the first MAX_TIMELINE events in the job's time. Both read each
event once and hold one small row a group or an entry (issue 23: a 131,072-rank job's collateral stays a few lines)."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from correlator.events import Event, when
from schemas.diagnosis import CollateralGroup, TimelineEntry

MAX_TIMELINE = 100


def collateral_groups(failures: Sequence[Event], root_events: set[int]) -> list[CollateralGroup]:
    """Counted event by event: every step that adds to ``failures`` makes events of its own, so each is there once.
    A group's ranks are listed as they come and made a set one group at a time: a set of ids a job's event, and
    a set of ranks a group, all held at once, were the diagnosis's peak at 8,192 ranks (issue 23)."""
    groups: dict[str, tuple[list[int], list[str], list[int]]] = {}  # signature -> ranks, hosts, [events + repeats]
    for ev in failures:
        if id(ev) in root_events or ev.stale:
            continue
        g = groups.get(ev.signature.id)
        if g is None:
            g = groups[ev.signature.id] = ([], [], [0])
        if ev.reporter.rank is not None:
            g[0].append(ev.reporter.rank)
        if ev.reporter.host is not None:
            g[1].append(ev.reporter.host)
        g[2][0] += 1 + sum(f.repeats for f in ev.findings)  # with the lines a flood's scan left out
    out = [CollateralGroup.of(sig, [int(r) for r in set(ranks)], [str(h) for h in set(hosts)], n)
           for sig, (ranks, hosts, (n,)) in groups.items()]
    return sorted(out, key=lambda g: -g.count)


def timeline(failures: Sequence[Event], root_events: set[int],
              offsets: Mapping[str | None, timedelta]) -> list[TimelineEntry]:
    # the first MAX_TIMELINE as sorted() orders them (nsmallest is stable too), without a key for every event
    # held at once
    never = datetime.max.replace(tzinfo=None).astimezone()
    ordered = heapq.nsmallest(MAX_TIMELINE, failures, key=lambda ev: (when(ev, offsets) or never, ev.best.order))
    entries = []
    for ev in ordered:
        role = "initiating" if id(ev) in root_events else "context" if ev.stale else "collateral"
        entries.append(TimelineEntry(time=when(ev, offsets), rank=ev.reporter.rank, host=ev.reporter.host,
                                     signature=ev.signature.id, role=role, source=ev.best.source,
                                     line=ev.best.line_no))
    return entries
