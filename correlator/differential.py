"""Unknown failures: error lines whose template shows on one rank or host and not the others.

A failure no one catalogued still gets a suspect and the lines to read: numbers, addresses and paths are masked
into templates, and templates unique to one speaker, earliest first, point at it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from correlator.kept import ContextRecord
from correlator.speakers import Who
from correlator.templates import shape


@dataclass(frozen=True)
class Suspect:
    rank: int | None
    host: str | None
    lines: list[ContextRecord]
    unique: bool  # its templates are seen on no other speaker


class _Shapes(dict[str, tuple[str, int]]):
    """Each error text's (template, gravity), masked once per diagnosis, for records that do not carry theirs (an
    unfolded scan's: see rows)."""

    def __missing__(self, text: str) -> tuple[str, int]:
        found = self[text] = shape(text)
        return found


Spoken = tuple[tuple[int | None, str | None], tuple[str, int], ContextRecord]  # (speaker key, row, record)


def _spoken(records: list[ContextRecord]) -> list[Spoken]:
    """Each error record's speaker key and (template, gravity) row, read once: 22,000 records at 4,096 ranks. A
    folded scan's records carry their row in their fields (SourceScanner masks each distinct text once, in the
    pool's workers); the others' texts are masked here, each distinct text once."""
    shapes = _Shapes()
    # one key a speaker and one row a template, shared by the records that have them: this list is the peak of a
    # diagnosis's memory (issue 23), and most of a job's error lines are a few templates printed by every rank
    keys: dict[Who, tuple[int | None, str | None]] = {}
    rows: dict[tuple[str, int], tuple[str, int]] = {}
    out: list[Spoken] = []
    append = out.append
    for rec in records:
        fields, who = rec.fields, rec.who
        masked, grave = fields.get("template"), fields.get("gravity")
        row = (masked, grave) if type(masked) is str and type(grave) is int else shapes[rec.text]
        key = keys.get(who)
        if key is None:
            key = keys[who] = (who.rank, None) if who.rank is not None else (None, who.host)
        append((key, rows.setdefault(row, row), rec))
    return out


def _distinct(spoken: list[Spoken]) -> list[Spoken]:
    """The first record of each (template, gravity) a speaker printed. A line repeated every step counts once:
    what points at a speaker is how many different error lines it alone printed and how grave they read, not
    how chatty one of them is (the scanner already keeps one record per such row, with its repeat count)."""
    seen: set[tuple[str, int]] = set()
    out = []
    for item in spoken:
        if item[1] not in seen:
            seen.add(item[1])
            out.append(item)
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
    spoken = _spoken(errors)
    seen_on: dict[str, set[tuple[int | None, str | None]]] = defaultdict(set)
    for key, row, _ in spoken:
        seen_on[row[0]].add(key)
    allowed = None if early is None else {id(r) for r in early if r.who.rank is not None}
    speakers: dict[tuple[int | None, str | None], list[Spoken]] = defaultdict(list)
    for item in spoken:
        if allowed is None or id(item[2]) in allowed:
            speakers[item[0]].append(item)
    best: tuple[tuple[int, int, int], tuple[int | None, str | None], list[Spoken]] | None = None
    for key, items in speakers.items():
        items = _distinct(items)
        unique = [item for item in items if len(seen_on[item[1][0]]) == 1]
        rank_key = (sum(row[1] for _, row, _ in unique), 0 if key[0] is None else 1,
                    -min(rec.line_no for _, _, rec in items))
        if best is None or rank_key > best[0]:
            best = (rank_key, key, unique or items)
    if best is None:
        return None
    (weight, _, _), (rank, host), chosen = best
    lines = [rec for _, _, rec in chosen]
    alone = len({key for key, _, _ in spoken} | (failing or set())) == 1
    grave = any(row[1] >= 2 for _, row, _ in chosen)  # a skipped sample or a retry alone does not kill a job
    return Suspect(rank, host or lines[0].who.host, lines[:5], unique=weight > 0 and grave and not alone)
