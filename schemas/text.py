"""Plain-text phrases of a diagnosis that every renderer shares: the terminal and Markdown reports (firstfault),
Slack posts (notifiers) and the web pages (api). Plain strings only, so that none of them pulls in another's
library (rich stays in the CLI)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from schemas.diagnosis import CollateralGroup, Suspect


def rank_ranges(ranks: Sequence[int]) -> str:
    """[0,1,2,3,5,7,8,9] -> '0-3,5,7-9'."""
    parts: list[str] = []
    values = sorted(set(ranks))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)


def spans_text(spans: Sequence[tuple[int, int]], total: int) -> str:
    """[(0, 3), (5, 5)] -> '0-3,5', and how many of ``total`` ranks the spans leave out ('+12 more')."""
    shown = ",".join(str(first) if first == last else f"{first}-{last}" for first, last in spans)
    covered = sum(last - first + 1 for first, last in spans)
    return shown + (f" +{total - covered} more" if total > covered else "")


def collateral_where(g: CollateralGroup, hosts_shown: int = 4, name: Callable[[str], str] = str,
                     runs_shown: int = 16) -> list[str]:
    """Where a collateral group was printed: its first runs of ranks, its first hosts, and how many more of each
    (``name`` escapes a host for the renderer). At most a line or two whatever the job's size."""
    where = [f"ranks {spans_text(g.rank_spans[:runs_shown], g.rank_count)}"] if g.rank_count else []
    if g.host_count:
        more = f" +{g.host_count - hosts_shown}" if g.host_count > hosts_shown else ""
        where.append("hosts " + ", ".join(name(h) for h in g.hosts[:hosts_shown]) + more)
    return where


def who(rank: int | None, host: str | None) -> str:
    """The rank and host a verdict names, as a reader says it."""
    if rank is None and host is None:
        return "no single rank (job-wide)"
    if rank is None:
        return f"host {host}"
    return f"rank {rank}" + (f" on {host}" if host else "")


def suspect_line(s: Suspect) -> str:
    """One suspect of a `suspects` verdict: who, how likely, what points at it."""
    what = f" `{s.signature}`" if s.signature else ""
    return f"{who(s.rank, s.host)} ({s.confidence:.0%}){what}"
