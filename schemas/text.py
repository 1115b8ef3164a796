"""Plain-text phrases of a diagnosis that every renderer shares: the terminal and Markdown reports (firstfault),
Slack posts (notifiers) and the web pages (api). Plain strings only, so that none of them pulls in another's
library (rich stays in the CLI)."""

from __future__ import annotations

from collections.abc import Sequence

from schemas.diagnosis import Suspect


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
