"""Unknown failures: error lines whose template shows on one rank or host and not the others.

A failure no one catalogued still gets a suspect and the lines to read: numbers, addresses and paths are masked
into templates, and templates unique to one speaker, earliest first, point at it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
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


Key = tuple[int | None, str | None]  # a speaker: (rank, None), or (None, host)
Row = tuple[str, int]  # an error line's (template, gravity)
Spoken = tuple[Row, ContextRecord]
_MANY = ("many",)  # seen_on's mark of a template more than one speaker printed: equal to no speaker's key


def _by_speaker(errors: list[ContextRecord], shapes: _Shapes, one_run: bool) -> Iterator[tuple[Key, list[Spoken]]]:
    """Each speaker's records (those that may make a suspect), speakers in the order first seen.
    One speaker's at a time where each speaker's records come together (``one_run``: a source's, as read): every
    speaker's list, held at once, was the differential view's peak (0.3 KB a rank at 8,192 ranks; issue 23)."""
    speakers: dict[Key, list[Spoken]] = defaultdict(list)
    last: Key | None = None
    for key, row, rec in _read(errors, shapes):
        if one_run and key != last and last is not None:
            yield from speakers.items()
            speakers.clear()
        last = key
        speakers[key].append((row, rec))
    yield from speakers.items()


def _read(records: list[ContextRecord], shapes: _Shapes) -> Iterator[tuple[Key, Row, ContextRecord]]:
    """Each error record's speaker key and (template, gravity) row. A folded scan's records carry their row in
    their fields (SourceScanner masks each distinct text once, in the pool's workers); the others' texts are
    masked here, each distinct text once. Equal rows are one tuple, and so are the keys of a run of one
    speaker's records: what the caller keeps of them is the peak of a diagnosis's memory (issue 23)."""
    shapes = _Shapes()
    rows: dict[Row, Row] = {}
    last: Who | None = None
    key: Key = (None, None)
    for rec in records:
        fields, who = rec.fields, rec.who
        masked, grave = fields.get("template"), fields.get("gravity")
        row = (masked, grave) if type(masked) is str and type(grave) is int else shapes[rec.text]
        if who is not last:
            last, key = who, ((who.rank, None) if who.rank is not None else (None, who.host))
        yield key, rows.setdefault(row, row), rec


def _distinct(spoken: list[Spoken]) -> list[Spoken]:
    """The first record of each (template, gravity) a speaker printed. A line repeated every step counts once:
    what points at a speaker is how many different error lines it alone printed and how grave they read, not
    how chatty one of them is (the scanner already keeps one record per such row, with its repeat count)."""
    seen: set[Row] = set()
    out = []
    for item in spoken:
        if item[0] not in seen:
            seen.add(item[0])
            out.append(item)
    return out


def differential(records: list[ContextRecord], named_only: bool = False,
                 early: list[ContextRecord] | None = None,
                 failing: set[Key] | None = None) -> Suspect | None:
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
    # template -> the one speaker that printed it, or _MANY: uniqueness is all that is asked of it
    seen_on: dict[str, Key | tuple[str]] = {}
    allowed = None if early is None else {id(r) for r in early if r.who.rank is not None}
    if allowed is not None and not allowed:  # no line may make a suspect: every rank's lines need not be read
        return None
    voices: set[Key] = set()  # the speakers of error lines, up to two: enough to tell one from several
    shapes = _Shapes()
    runs: set[Key] = set()  # the speakers whose run of records ended, to tell whether each has one run
    last: Key | None = None
    one_run = True
    for key, row, _ in _read(errors, shapes):
        if seen_on.setdefault(row[0], key) != key:
            seen_on[row[0]] = _MANY
        if len(voices) < 2:
            voices.add(key)
        if key != last:
            one_run = one_run and key not in runs
            if last is not None:
                runs.add(last)
            last = key
    del runs
    best: tuple[tuple[int, int, int], Key, list[Spoken]] | None = None
    # Only the allowed records can make a suspect: those alone are read again (in their order, each speaker's run
    # stays one run), not every rank's error lines a second time.
    chosen_from = errors if allowed is None else [r for r in errors if id(r) in allowed]
    for key, items in _by_speaker(chosen_from, shapes, one_run):
        items = _distinct(items)
        unique = [item for item in items if seen_on[item[0][0]] != _MANY]
        rank_key = (sum(row[1] for row, _ in unique), 0 if key[0] is None else 1,
                    -min(rec.line_no for _, rec in items))
        if best is None or rank_key > best[0]:
            best = (rank_key, key, unique or items)
    if best is None:
        return None
    (weight, _, _), (rank, host), chosen = best
    lines = [rec for _, rec in chosen]
    alone = len(voices | (failing or set())) == 1
    grave = any(row[1] >= 2 for row, _ in chosen)  # a skipped sample or a retry alone does not kill a job
    return Suspect(rank, host or lines[0].who.host, lines[:5], unique=weight > 0 and grave and not alone)
