"""A finding whose text is kept as its digits and a skeleton shared with every line like it (issue 23). Pure.

At 131,072 ranks a survivor's watchdog timeout and its agent's SIGTERM lines are the texts only findings hold
(0.46 KB a rank at 8,192 ranks): every rank prints the same line but for its numbers (rank, time, pid, the
milliseconds it waited). Such a text is kept as the line with each run of digits cut out (``\\0`` where it was),
shared among the sources by the interner, and the runs themselves, space-separated: the watchdog's 280-byte
text becomes a 120-byte string of digits. ``text`` rebuilds the line, equal to the one read, when asked for: a
reader sees the same string, made anew each time. A text a context record shares is left whole (the record holds
it anyway), and so is a text with no digits or with a NUL of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import fields
from itertools import chain, compress, count, repeat
from operator import attrgetter, is_
from typing import Any

from schemas.findings import Finding

_DIGITS = re.compile(r"[0-9]+")
_HOLE = "\0"
_PLAIN: Any = Finding.__dict__["text"]  # Finding's own slot: a packed finding keeps its digits there
_values = attrgetter(*(f.name for f in fields(Finding)))  # in the dataclass's order, as its eq compares
_OTHER_FIELDS = ("signature", "generic", "role", "source", "line_no", "speaker", "time", "clock", "fields", "order",
                 "event", "repeats")


class PackedFinding(Finding):
    """A Finding that reads, compares, prints and serialises as the one it was made from. One slot more
    (``_skeleton``: None while the text is kept whole, as anything that sets ``text`` keeps it)."""

    __slots__ = ("_skeleton",)
    _skeleton: str | None

    @property
    def text(self) -> str:
        kept: str = _PLAIN.__get__(self)
        skeleton = self._skeleton
        if skeleton is None:
            return kept
        parts = skeleton.split(_HOLE)
        return "".join(chain.from_iterable(zip(parts, kept.split(" "), strict=False))) + parts[-1]

    @text.setter
    def text(self, value: str) -> None:
        _PLAIN.__set__(self, value)
        self._skeleton = None

    def __eq__(self, other: object) -> bool:  # equal to the Finding it was made from (a dataclass's eq is not)
        if not isinstance(other, Finding):
            return NotImplemented
        return _values(self) == _values(other)

    __hash__ = None  # type: ignore[assignment]  # as Finding's

    def __reduce__(self) -> tuple[Any, ...]:  # its slots set one by one would set the digits as the whole text
        return _whole, ({name: getattr(self, name) for name in (*_OTHER_FIELDS, "text")},)


def starting(findings: Sequence[Finding], prefix: str) -> list[Finding]:
    """The findings whose text starts with ``prefix`` (no digit, no NUL in it), in order, found in C and without
    rebuilding a packed text: a packed text starts as its skeleton does up to its first hole (a digit), and its
    own slot then holds digits alone. Read by steps that look for a launcher's prefix in every rank's lines."""
    at = set(compress(count(), map(str.startswith, map(_PLAIN.__get__, findings), repeat(prefix))))
    packed = list(compress(count(), map(is_, map(type, findings), repeat(PackedFinding))))
    if packed:
        skeletons = map(_SKELETON.__get__, map(findings.__getitem__, packed))
        at.update(compress(packed, map(str.startswith, map(str, skeletons), repeat(prefix))))  # str(None): "None"
    return [findings[i] for i in sorted(at)]


_SKELETON: Any = PackedFinding.__dict__["_skeleton"]


def _whole(values: dict[str, Any]) -> Finding:
    return Finding(**values)


def digit_runs(text: str) -> tuple[str, str] | None:
    """(the runs of digits joined by spaces, the text with each run a NUL), or None where the text has no digit or
    a NUL of its own. catalog._linescan.digit_runs is its C twin (one pass, no regex: two regex passes were 9% of
    a rank file's scan at 8,192 ranks)."""
    digits = _DIGITS.findall(text)
    if not digits or _HOLE in text:
        return None
    return " ".join(digits), _DIGITS.sub(_HOLE, text)


def packed(finding: Finding, shared: Callable[[str], str],
           split: Callable[[str], tuple[str, str] | None] | None = None) -> Finding:
    """``finding`` with its text kept as digits and skeleton (``shared`` makes one copy of equal skeletons);
    itself where that does not apply. ``split``: digit_runs or its C twin (None: digit_runs)."""
    found = (split or digit_runs)(finding.text)
    if found is None:
        return finding
    out = PackedFinding.__new__(PackedFinding)
    for name in _OTHER_FIELDS:
        setattr(out, name, getattr(finding, name))
    _PLAIN.__set__(out, found[0])
    out._skeleton = shared(found[1])
    return out
