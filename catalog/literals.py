"""Required literals: a prefilter for the few patterns scanned with ``re``.

Every match of a pattern contains its longest top-level literal run, so ``re`` needs to run only on the lines that
hold it. Finding a literal is cheap (bytes.find, or Hyperscan alongside the catalog): the full-buffer ``re`` pass
it replaces is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence


def line_start(buffer: bytes, end: int) -> int:
    return buffer.rfind(b"\n", 0, end) + 1


_SPECIAL = frozenset(b".^$*+?{}[]|()")
_OPTIONAL = (b"?", b"*", b"{0,", b"{0}")
MIN_LITERAL = 4  # shorter literals are too common in logs to save anything over a full pass


def required_literal(pattern: bytes) -> bytes | None:
    """The longest run of bytes that every match of ``pattern`` contains, read off the pattern's top level
    (groups, classes and escapes like ``\\d`` break a run; a top-level ``|`` or a case-insensitive pattern has
    none). None when no run is at least MIN_LITERAL long."""
    if re.compile(pattern).flags & (re.IGNORECASE | re.VERBOSE):
        return None
    runs: list[bytes] = []
    run = bytearray()
    depth = 0
    i = 0
    while i < len(pattern):
        ch = pattern[i : i + 1]
        if depth or ch in (b"(", b"[") or (ch[0] in _SPECIAL and ch not in (b"?", b"*", b"+", b"{")):
            if ch == b"|" and depth == 0:
                return None
            runs.append(bytes(run))
            run.clear()
            i, depth = _skip_structure(pattern, i, depth)
            continue
        if ch in (b"?", b"*", b"+", b"{"):  # a quantifier: its atom (the run's last byte) may repeat or vanish
            last = run[-1:]
            del run[-1:]
            runs.append(bytes(run) + (last if pattern.startswith(b"+", i) else b""))
            run.clear()
            i = _skip_quantifier(pattern, i)
            continue
        if ch == b"\\":
            nxt = pattern[i + 1 : i + 2]
            if not nxt or nxt.isalnum():  # \d, \s, \b, \x41, \1 ...: not one fixed byte
                runs.append(bytes(run))
                run.clear()
                i += 2
                continue
            ch = nxt
            i += 1
        run += ch
        i += 1
    runs.append(bytes(run))
    best = max(runs, key=len)
    return best if len(best) >= MIN_LITERAL else None


def _skip_structure(pattern: bytes, i: int, depth: int) -> tuple[int, int]:
    """Step over one structural byte, a whole character class, or an escape inside a group."""
    ch = pattern[i : i + 1]
    if ch == b"\\":
        return i + 2, depth
    if ch == b"[":
        j = i + 1
        if pattern.startswith(b"^", j):
            j += 1
        if pattern.startswith(b"]", j):
            j += 1
        while j < len(pattern) and pattern[j : j + 1] != b"]":
            j += 2 if pattern[j : j + 1] == b"\\" else 1
        return j + 1, depth
    if ch == b"(":
        return i + 1, depth + 1
    if ch == b")":
        i = _skip_quantifier(pattern, i + 1) if depth == 1 else i + 1
        return i, depth - 1
    return i + 1, depth


def _skip_quantifier(pattern: bytes, i: int) -> int:
    if pattern.startswith(b"{", i):
        end = pattern.find(b"}", i)
        i = len(pattern) if end < 0 else end + 1
    elif pattern[i : i + 1] in (b"?", b"*", b"+"):
        i += 1
    if pattern[i : i + 1] in (b"?", b"+"):  # lazy or possessive
        i += 1
    return i


def literal_lines(buffer: bytes, literal: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of every line of ``buffer`` holding ``literal``, once each; bytes.find runs at memory speed."""
    pos = buffer.find(literal)
    while pos >= 0:
        end = buffer.find(b"\n", pos)
        end = len(buffer) if end < 0 else end
        yield line_start(buffer, pos), end
        pos = buffer.find(literal, end)


class LineFilteredRe:
    """One pattern scanned with ``re`` only on the lines that hold its required literal, or over the whole buffer
    when it has none. ``^``/``$`` still hold on a line's (start, end): start follows a newline, end is one."""

    def __init__(self, index: int, regex: re.Pattern[bytes]) -> None:
        self.index = index
        self.regex = regex
        self.literal = required_literal(regex.pattern)

    def line_starts(self, buffer: bytes) -> list[int]:
        """The start of every line of ``buffer`` that the pattern matches, in order, once each."""
        if self.literal is None:
            return list(dict.fromkeys(line_start(buffer, m.start()) for m in self.regex.finditer(buffer)))
        return [start for start, end in literal_lines(buffer, self.literal) if self.regex.search(buffer, start, end)]


def scan_filtered(scans: Sequence[LineFilteredRe], buffer: bytes, found: dict[int, set[int]],
                  literal_hits: Mapping[bytes, Iterable[int]] | None = None) -> None:
    """Add what ``scans`` match in ``buffer`` to ``found``. ``literal_hits`` holds, for literals another engine
    already located, the starts of the lines holding them; other literals get one find pass each."""
    hits = literal_hits or {}
    by_literal: dict[bytes, list[LineFilteredRe]] = {}
    for scan in scans:
        if scan.literal is None:
            for start in scan.line_starts(buffer):
                found.setdefault(start, set()).add(scan.index)
        else:
            by_literal.setdefault(scan.literal, []).append(scan)
    for literal, group in by_literal.items():
        lines = _ends(buffer, hits[literal]) if literal in hits else literal_lines(buffer, literal)
        for start, end in lines:
            for scan in group:
                if scan.regex.search(buffer, start, end):
                    found.setdefault(start, set()).add(scan.index)


def _ends(buffer: bytes, starts: Iterable[int]) -> Iterator[tuple[int, int]]:
    for start in sorted(set(starts)):
        end = buffer.find(b"\n", start)
        yield start, len(buffer) if end < 0 else end
