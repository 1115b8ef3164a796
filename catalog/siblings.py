"""Sibling lines: lines of one context pattern that differ only in digits that nothing reads (see Matcher.spans).

NCCL prints a ring or channel line per channel, 16 to 32 for each communicator a process sets up, that differ
only in the channel's number. Where a context pattern names such a volatile part, the matcher confirms one line
for all its siblings: their memo key is the line with those digits zeroed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


@dataclass(frozen=True)
class Volatile:
    """The volatile digits of a context pattern's lines: a run ``\\d+`` or ``\\d+/\\d+`` right after one of
    ``after`` and right before ``before``, at the leftmost place in the line that has all three (at one place, the
    first of ``after`` that fits). Said in literals rather than as a regex so that the C line loop finds them
    exactly as ``regex`` does (catalog/_linescan_lines.h, volatile_span), without a regex engine."""

    after: tuple[str, ...]
    before: str

    def __post_init__(self) -> None:
        texts = (*self.after, self.before)
        if not self.after or not all(texts) or not all(t.isascii() for t in texts):
            raise ValueError(f"{self}: after and before must be non-empty ASCII literals")
        if self.before[0].isdigit() or self.before[0] == "/":
            # then a shorter digit run could fit as well: the first one found would not be the regex's
            raise ValueError(f"{self}: before must not start with a digit or '/'")

    @cached_property
    def regex(self) -> re.Pattern[bytes]:
        """What the volatile digits are, as a regex: the group is the digits."""
        after = b"|".join(re.escape(a.encode()) for a in self.after)
        return re.compile(b"(?:" + after + rb")(\d+(?:/\d+)?)" + re.escape(self.before.encode()))

    @property
    def literals(self) -> tuple[tuple[bytes, ...], bytes]:
        """(after, before) as bytes: what the C line loop takes."""
        return tuple(a.encode() for a in self.after), self.before.encode()


def sibling_key(index: int, volatile: Volatile, raw: bytes) -> bytes | tuple[int, bytes]:
    """The memo key ``raw`` shares with its siblings: the only pattern that may match it, and ``raw`` with its
    volatile digits zeroed (``raw`` itself where it has none). A tuple never equals a line's bytes."""
    m = volatile.regex.search(raw)
    if m is None:
        return raw
    start, end = m.span(1)
    return index, raw[:start] + raw[start:end].translate(_DIGITS_TO_ZERO) + raw[end:]
