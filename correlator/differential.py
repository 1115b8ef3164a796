"""Unknown failures: error lines whose template shows on one rank or host and not the others.

A failure no one catalogued still gets a suspect and the lines to read: numbers, addresses and paths are masked
into templates, and templates unique to one speaker, earliest first, point at it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from correlator.kept import ContextRecord
from correlator.templates import shape


@dataclass(frozen=True)
class Suspect:
    rank: int | None
    host: str | None
    lines: list[ContextRecord]
    unique: bool  # its templates are seen on no other speaker


class _Shapes(dict[str, tuple[str, int]]):
    """Each error text's (template, gravity), computed once per diagnosis: every text is asked for three or four
    times below, and at 4,096 ranks masking them was half the differential's time. A folded scan's records
    carry theirs in their fields (SourceScanner): those are taken as they are."""

    def __init__(self, records: list[ContextRecord]) -> None:
        super().__init__()
        for rec in records:
            masked, grave = rec.fields.get("template"), rec.fields.get("gravity")
            if isinstance(masked, str) and isinstance(grave, int):
                self.setdefault(rec.text, (masked, grave))

    def __missing__(self, text: str) -> tuple[str, int]:
        found = self[text] = shape(text)
        return found


def _distinct(records: list[ContextRecord], shapes: _Shapes) -> list[ContextRecord]:
    """The first record of each (template, gravity) a speaker printed. A line repeated every step counts once:
    what points at a speaker is how many different error lines it alone printed and how grave they read, not
    how chatty one of them is (the scanner already keeps one record per such row, with its repeat count)."""
    seen: set[tuple[str, int]] = set()
    out = []
    for rec in records:
        row = shapes[rec.text]
        if row not in seen:
            seen.add(row)
            out.append(rec)
    return out


def differential(records: list[ContextRecord], named_only: bool = False,
                 early: list[ContextRecord] | None = None,
                 failing: set[tuple[int | None, str | None]] | None = None) -> Suspect | None:
    """The speaker whose error templates are unique (most of them, earliest first).

    Uniqueness is judged against every error line; with ``early``, only those lines (the ones before the
    cascade) can make a suspect, and only a rank's: a host's unattributed lines there are mostly its launcher
    reporting what its ranks did. With ``named_only``, lines whose speaker is unknown (a scheduler's output)
    take no part: they cannot point at anyone. ``failing`` are the (rank, None) or (None, host) keys of
    speakers whose catalogued failures were found: a speaker is not alone when they are failing too.
    """
    errors = [r for r in records if r.kind == "errorish"
              and not (named_only and r.who.rank is None and r.who.host is None)]
    if not errors:
        return None
    shapes = _Shapes([*errors, *(early or [])])
    # Each record's speaker and (template, gravity), read once: 22,000 error records at 4,096 ranks.
    spoken: list[tuple[tuple[int | None, str | None], tuple[str, int], ContextRecord]] = [
        ((w.rank, None) if w.rank is not None else (None, w.host), shapes[rec.text], rec)
        for rec in errors for w in (rec.who,)]
    seen_on: dict[str, set[tuple[int | None, str | None]]] = defaultdict(set)
    for key, row, _ in spoken:
        seen_on[row[0]].add(key)
    allowed = None if early is None else {id(r) for r in early if r.who.rank is not None}
    speakers: dict[tuple[int | None, str | None], list[ContextRecord]] = defaultdict(list)
    for key, _, rec in spoken:
        if allowed is None or id(rec) in allowed:
            speakers[key].append(rec)
    best: tuple[tuple[int, int, int], tuple[int | None, str | None], list[ContextRecord]] | None = None
    for key, recs in speakers.items():
        recs = _distinct(recs, shapes)
        unique = [r for r in recs if len(seen_on[shapes[r.text][0]]) == 1]
        rank_key = (sum(shapes[r.text][1] for r in unique), 0 if key[0] is None else 1, -min(r.line_no for r in recs))
        if best is None or rank_key > best[0]:
            best = (rank_key, key, unique or recs)
    if best is None:
        return None
    (weight, _, _), (rank, host), lines = best
    alone = len({key for key, _, _ in spoken} | (failing or set())) == 1
    grave = any(shapes[r.text][1] >= 2 for r in lines)  # a skipped sample or a retry alone does not kill a job
    return Suspect(rank, host or lines[0].who.host, lines[:5], unique=weight > 0 and grave and not alone)
