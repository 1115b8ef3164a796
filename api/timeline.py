"""The cross-rank timeline picture: an inline SVG drawn on the server from a diagnosis.

Ranks run down, time runs right; times are the diagnosis's, already corrected for each host's clock offset.
The initiating event is a red diamond on its rank (a host-level line, like a kernel Xid, spans the ranks known to
live on that host, or sits on the root cause's rank when the diagnosis names one); collateral events are blue
dots; events whose line had no wall clock go in a "no clock" lane on the right. Past MAX_ROWS ranks, ranks are
drawn in bands of equal size so that a 4,096-rank job still fits on a screen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from html import escape

from schemas.diagnosis import Diagnosis, TimelineEntry

MAX_ROWS = 64
MAX_EVENTS = 4000
WIDTH, LEFT, RIGHT, TOP, BOTTOM = 960, 92, 24, 28, 40
NO_CLOCK_W = 90


@dataclass(frozen=True)
class Rows:
    """Which row each rank falls in: one row per rank, or bands of `band` ranks."""

    world: int
    band: int
    extra: tuple[str, ...]  # lanes below the ranks: hosts with no known rank, then the job itself

    @property
    def count(self) -> int:
        return math.ceil(self.world / self.band) + len(self.extra)

    def of_rank(self, rank: int) -> int:
        return rank // self.band

    def label(self, row: int) -> str:
        ranked = math.ceil(self.world / self.band)
        if row >= ranked:
            return self.extra[row - ranked]
        if self.band == 1:
            return f"rank {row}"
        return f"{row * self.band}-{min(self.world, (row + 1) * self.band) - 1}"


def _host_ranks(d: Diagnosis) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for e in d.timeline:
        if e.host is not None and e.rank is not None:
            out.setdefault(e.host, set()).add(e.rank)
    rc = d.root_cause
    if rc and rc.host and rc.rank is not None:
        out.setdefault(rc.host, set()).add(rc.rank)
    return out


def _rows(d: Diagnosis, host_ranks: dict[str, set[int]]) -> Rows:
    # each group's highest rank: its last span's end (its listed ranks are only the lowest; past 64 runs of ranks
    # the spans stop short too, and the lanes are drawn for the ranks they reach)
    ranks = [e.rank for e in d.timeline if e.rank is not None] + [g.rank_spans[-1][1] for g in d.collateral
                                                                   if g.rank_spans]
    if d.root_cause and d.root_cause.rank is not None:
        ranks.append(d.root_cause.rank)
    world = max(ranks, default=-1) + 1
    lanes = sorted({e.host for e in d.timeline if e.rank is None and e.host and e.host not in host_ranks})
    if any(e.rank is None and e.host is None for e in d.timeline):
        lanes.append("job-wide")
    return Rows(world=world, band=max(1, math.ceil(world / MAX_ROWS)), extra=tuple(lanes))


def _span(e: TimelineEntry, d: Diagnosis, rows: Rows, host_ranks: dict[str, set[int]]) -> tuple[int, int, int | None]:
    """The rows an event covers (first, last) and the rank it is drawn at, if one."""
    rc = d.root_cause
    if e.rank is not None:
        return rows.of_rank(e.rank), rows.of_rank(e.rank), e.rank
    if e.role == "initiating" and rc and rc.rank is not None and (rc.host is None or rc.host == e.host):
        return rows.of_rank(rc.rank), rows.of_rank(rc.rank), rc.rank
    if e.host and e.host in host_ranks:
        known = host_ranks[e.host]
        return rows.of_rank(min(known)), rows.of_rank(max(known)), None
    lane = rows.extra.index(e.host if e.host else "job-wide")
    row = math.ceil(rows.world / rows.band) + lane
    return row, row, None


def _ticks(t0: datetime, t1: datetime, n: int = 5) -> list[datetime]:
    if t1 <= t0:
        return [t0]
    step = (t1 - t0) / (n - 1)
    return [t0 + step * i for i in range(n)]


def _fmt(t: datetime) -> str:
    return t.strftime("%H:%M:%S")


@dataclass(frozen=True)
class TimeAxis:
    """Corrected wall-clock time to x; events with no clock go to the middle of the lane on the right."""

    t0: datetime | None
    t1: datetime | None
    x_end: float  # where the timed area ends (the no-clock lane follows, when there is one)

    @classmethod
    def of(cls, events: list[TimelineEntry]) -> TimeAxis:
        timed = [e.time for e in events if e.time is not None]
        untimed = any(e.time is None for e in events)
        x_end = WIDTH - RIGHT - (NO_CLOCK_W if untimed else 0)
        return cls(min(timed, default=None), max(timed, default=None), x_end)

    @property
    def has_lane(self) -> bool:
        return self.x_end < WIDTH - RIGHT

    def x(self, t: datetime | None) -> float:
        if t is None or self.t0 is None or self.t1 is None:
            return self.x_end + NO_CLOCK_W / 2
        span = (self.t1 - self.t0).total_seconds()
        share = (t - self.t0).total_seconds() / span if span > 0 else 0.5
        return LEFT + 10 + (self.x_end - LEFT - 20) * share


def timeline_svg(d: Diagnosis) -> str:
    events = d.timeline[:MAX_EVENTS]
    if not events:
        return ""
    host_ranks = _host_ranks(d)
    rows = _rows(d, host_ranks)
    row_h = max(5.0, min(16.0, 720 / max(1, rows.count)))
    height = TOP + rows.count * row_h + BOTTOM
    axis = TimeAxis.of(events)
    out = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0f}" '
           f'width="{WIDTH}" height="{height:.0f}" role="img" '
           f'aria-label="cross-rank timeline: ranks down, corrected time across">']
    out += _grid(rows, row_h, axis.x_end, height, axis.has_lane, d)
    for t in _ticks(axis.t0, axis.t1) if axis.t0 and axis.t1 else []:
        out.append(f'<text class="tick" x="{axis.x(t):.1f}" y="{height - BOTTOM + 16:.1f}" '
                   f'text-anchor="middle">{_fmt(t)}</text>')
    initiating: list[str] = []
    for e in events:
        first, last, rank = _span(e, d, rows, host_ranks)
        mark = _marker(e, axis.x(e.time), TOP + (first + 0.5) * row_h, TOP + (last + 0.5) * row_h, row_h, rank)
        (initiating if e.role == "initiating" else out).append(mark)
    out += initiating  # drawn last: on top of the collateral
    out.append("</svg>")
    return "\n".join(out)


def _grid(rows: Rows, row_h: float, x_end: float, height: float, untimed: bool, d: Diagnosis) -> list[str]:
    out = []
    rc = d.root_cause
    root_row = rows.of_rank(rc.rank) if rc and rc.rank is not None else None
    every = max(1, math.ceil(rows.count / 32))
    for row in range(rows.count):
        y = TOP + row * row_h
        cls = "row root" if row == root_row else ("row odd" if row % 2 else "row")
        out.append(f'<rect class="{cls}" x="{LEFT}" y="{y:.1f}" width="{x_end - LEFT:.1f}" height="{row_h:.1f}"/>')
        near_root = root_row is not None and abs(row - root_row) == 1 and row_h < 12
        if (row % every == 0 and not near_root) or row == root_row:
            out.append(f'<text class="rowlabel" data-row="{row}" x="{LEFT - 6}" y="{y + row_h * 0.75:.1f}" '
                       f'text-anchor="end">{escape(rows.label(row))}</text>')
    if untimed:
        out.append(f'<rect class="noclock" x="{x_end}" y="{TOP}" width="{NO_CLOCK_W}" '
                   f'height="{rows.count * row_h:.1f}"/>')
        out.append(f'<text class="tick" x="{x_end + NO_CLOCK_W / 2}" y="{TOP - 8}" '
                   f'text-anchor="middle">no clock</text>')
    axis = "rank" if rows.band == 1 else f"ranks (bands of {rows.band})"
    out.append(f'<text class="axis" x="6" y="{TOP - 10}">{axis}</text>')
    out.append(f'<text class="axis" x="{LEFT}" y="{height - 6:.1f}">time (UTC, corrected for clock skew)</text>')
    return out


def _marker(e: TimelineEntry, x: float, y0: float, y1: float, row_h: float, rank: int | None) -> str:
    who = f"rank {rank}" if rank is not None else (f"host {e.host}" if e.host else "job-wide")
    when = e.time.isoformat(timespec="milliseconds") if e.time else "no clock"
    where = f" at {e.source}:{e.line}" if e.source else ""
    title = escape(f"{e.role}: {e.signature} on {who}{' (' + e.host + ')' if e.host and rank is not None else ''}"
                   f", {when}{where}")
    attrs = (f'class="event {e.role}" data-rank="{rank if rank is not None else ""}" '
             f'data-host="{escape(e.host or "")}" data-time="{escape(when)}" data-signature="{escape(e.signature)}"')
    r = max(2.0, min(5.0, row_h * 0.35))
    body = ""
    if y1 > y0:  # a host-level line: a bar over the host's ranks
        body += (f'<rect x="{x - r / 2:.1f}" y="{y0 - row_h / 2:.1f}" width="{r:.1f}" '
                 f'height="{y1 - y0 + row_h:.1f}" rx="1"/>')
    y = (y0 + y1) / 2
    if e.role == "initiating":
        s = r * 1.9
        body += (f'<path d="M{x:.1f} {y - s:.1f} L{x + s:.1f} {y:.1f} L{x:.1f} {y + s:.1f} L{x - s:.1f} {y:.1f} Z"/>'
                 f'<text class="label" x="{x + s + 4:.1f}" y="{y + 4:.1f}">initiating</text>')
    else:
        body += f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}"/>'
    return f"<g {attrs}><title>{title}</title>{body}</g>"
