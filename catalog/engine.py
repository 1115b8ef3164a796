"""Multi-pattern scanning engines: find which patterns match in which lines of a byte buffer.

An engine is only a prefilter: it reports (pattern index, line start) candidates, and the final decision and the
captures always come from Python's ``re`` on the one decoded line (compiled with re.ASCII, as Hyperscan sees
bytes). So every engine yields identical findings; they differ only in speed.

- ``HyperscanEngine``: the whole catalog compiled once into one Hyperscan block-mode database.
- ``ReEngine``: the fallback where Hyperscan cannot load: one ``re`` scan per pattern over the buffer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


class Engine(Protocol):
    name: str

    def candidates(self, buffer: bytes) -> dict[int, set[int]]:
        """Map each line start offset in ``buffer`` to the indexes of patterns that may match in that line."""
        ...


def single_line(pattern: str) -> str:
    """Rewrite ``pattern`` so that it can never match across a newline, without changing what it matches
    inside one line: ``\\s`` becomes horizontal space, negated classes and ``\\D``/``\\W`` exclude ``\\n``."""
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            esc = pattern[i : i + 2]
            if esc == "\\s":
                out.append(" \\t\\r\\f\\x0b" if in_class else "[ \\t\\r\\f\\x0b]")
            elif esc in ("\\D", "\\W") and not in_class:
                out.append(f"[^\\n\\{esc[1].lower()}]")
            else:
                out.append(esc)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^\\n")
                i += 2
            else:
                out.append("[")
                i += 1
            if i < len(pattern) and pattern[i] == "]":  # a literal ] first in a class
                out.append("\\]")
                i += 1
            continue
        if ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def _line_start(buffer: bytes, end: int) -> int:
    return buffer.rfind(b"\n", 0, end) + 1


class ReEngine:
    name = "re"

    def __init__(self, patterns: Sequence[str]) -> None:
        self._compiled = [re.compile(single_line(p).encode(), re.ASCII | re.MULTILINE) for p in patterns]

    def candidates(self, buffer: bytes) -> dict[int, set[int]]:
        found: dict[int, set[int]] = {}
        for index, rx in enumerate(self._compiled):
            for m in rx.finditer(buffer):
                found.setdefault(_line_start(buffer, m.start()), set()).add(index)
        return found


def _hyperscan_expression(pattern: str) -> bytes:
    # Hyperscan has no named groups; captures are taken later by `re` on the matched line.
    return _NAMED_GROUP.sub("(?:", single_line(pattern)).encode()


class HyperscanEngine:
    name = "hyperscan"

    def __init__(self, patterns: Sequence[str]) -> None:
        import hyperscan  # imported here so that a missing or broken library leaves the fallback usable

        self._hs = hyperscan
        self._mode = hyperscan.HS_MODE_BLOCK
        self._leftover: list[tuple[int, re.Pattern[bytes]]] = []
        exprs = [_hyperscan_expression(p) for p in patterns]
        ids = list(range(len(patterns)))
        flags = [self._base_flag()] * len(exprs)
        self._db = hyperscan.Database(mode=self._mode)
        if exprs and not self._compile_into(self._db, exprs, ids, flags):
            # Some pattern needs a weaker mode: find which, one by one (slow, so only when needed).
            exprs, ids, flags = [], [], []
            for index, pattern in enumerate(patterns):
                expr = _hyperscan_expression(pattern)
                flag = self._flag_for(expr)
                if flag is None:
                    # Not expressible in Hyperscan even as a prefilter: scan this one with `re`.
                    self._leftover.append((index, re.compile(single_line(pattern).encode(), re.ASCII | re.M)))
                    continue
                exprs.append(expr)
                ids.append(index)
                flags.append(flag)
            if exprs:
                self._db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
        self._empty = not exprs
        self._scratch = hyperscan.Scratch(self._db) if exprs else None

    def _base_flag(self) -> int:
        return int(self._hs.HS_FLAG_MULTILINE)

    def also_with_re(self, patterns: dict[int, str]) -> None:
        """Scan these patterns with `re` as well: Hyperscan was seen to miss them (see Matcher.self_check)."""
        for index, pattern in patterns.items():
            self._leftover.append((index, re.compile(single_line(pattern).encode(), re.ASCII | re.M)))

    def _compile_into(self, db: object, exprs: list[bytes], ids: list[int], flags: list[int]) -> bool:
        try:
            db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)  # type: ignore[attr-defined]
        except self._hs.error:
            return False
        return True

    def _flag_for(self, expr: bytes) -> int | None:
        hs = self._hs
        for flag in (self._base_flag(), hs.HS_FLAG_MULTILINE | hs.HS_FLAG_PREFILTER):
            probe = hs.Database(mode=self._mode)
            try:
                probe.compile(expressions=[expr], ids=[0], elements=1, flags=[flag])
            except hs.error:
                continue
            return int(flag)
        return None

    def candidates(self, buffer: bytes) -> dict[int, set[int]]:
        found: dict[int, set[int]] = {}
        if not self._empty and buffer:
            ends: list[tuple[int, int]] = []

            def on_match(pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
                ends.append((pattern_id, end))

            self._db.scan(buffer, match_event_handler=on_match, scratch=self._scratch)
            for pattern_id, end in ends:
                # A match ending at a newline belongs to the line before it.
                at = end - 1 if end > 0 else 0
                found.setdefault(_line_start(buffer, at), set()).add(pattern_id)
        for index, rx in self._leftover:
            for m in rx.finditer(buffer):
                found.setdefault(_line_start(buffer, m.start()), set()).add(index)
        return found


def make_engine(patterns: Sequence[str], prefer: str = "auto") -> Engine:
    """Hyperscan when it loads (or when asked), else ``re``. ``prefer``: auto | hyperscan | re."""
    if prefer == "re":
        return ReEngine(patterns)
    try:
        return HyperscanEngine(patterns)
    except ImportError:
        if prefer == "hyperscan":
            raise
        return ReEngine(patterns)
