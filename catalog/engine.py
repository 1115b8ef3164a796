"""Multi-pattern scanning engines: find which patterns match in which lines of a byte buffer.

An engine is only a prefilter: it reports (pattern index, line start) candidates, and the final decision and the
captures always come from Python's ``re`` on the one decoded line (compiled with re.ASCII, as Hyperscan sees
bytes). So every engine yields identical findings; they differ only in speed.

- ``HyperscanEngine``: the whole catalog compiled once into one Hyperscan block-mode database.
- ``ReEngine``: the fallback where Hyperscan cannot load: one ``re`` scan per pattern over the buffer.
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from catalog.dbcache import BlobCache, cache_key

_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
CACHE_FORMAT = "hyperscan-db-1"  # bump when what the cache holds, or how the database is built, changes


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
        yield _line_start(buffer, pos), end
        pos = buffer.find(literal, end)


class LineFilteredRe:
    """One pattern scanned with ``re`` only on the lines that hold its required literal, or over the whole buffer
    when it has none. ``^``/``$`` still hold on a line's (start, end): start follows a newline, end is one."""

    def __init__(self, index: int, pattern: str) -> None:
        self.index = index
        self.regex = re.compile(single_line(pattern).encode(), re.ASCII | re.MULTILINE)
        self.literal = required_literal(self.regex.pattern)

    def line_starts(self, buffer: bytes) -> list[int]:
        """The start of every line of ``buffer`` that the pattern matches, in order, once each."""
        if self.literal is None:
            return list(dict.fromkeys(_line_start(buffer, m.start()) for m in self.regex.finditer(buffer)))
        return [start for start, end in literal_lines(buffer, self.literal) if self.regex.search(buffer, start, end)]


def _scan_filtered(scans: Sequence[LineFilteredRe], buffer: bytes, found: dict[int, set[int]]) -> None:
    """Add what ``scans`` match in ``buffer`` to ``found``; patterns sharing a literal share one pass for it."""
    by_literal: dict[bytes, list[LineFilteredRe]] = {}
    for scan in scans:
        if scan.literal is None:
            for start in scan.line_starts(buffer):
                found.setdefault(start, set()).add(scan.index)
        else:
            by_literal.setdefault(scan.literal, []).append(scan)
    for literal, group in by_literal.items():
        for start, end in literal_lines(buffer, literal):
            for scan in group:
                if scan.regex.search(buffer, start, end):
                    found.setdefault(start, set()).add(scan.index)


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
    """The whole catalog in one Hyperscan block-mode database. With a ``cache``, the compiled database (and which
    patterns Hyperscan cannot take) is stored under a hash of the expressions and reloaded on the next start."""

    name = "hyperscan"

    def __init__(self, patterns: Sequence[str], cache: BlobCache | None = None) -> None:
        import hyperscan  # imported here so that a missing or broken library leaves the fallback usable

        self._hs = hyperscan
        self._mode = hyperscan.HS_MODE_BLOCK
        self._patterns = list(patterns)
        exprs = [_hyperscan_expression(p) for p in patterns]
        self.cache_key = cache_key(CACHE_FORMAT, str(getattr(hyperscan, "__version__", "?")), platform.machine(),
                                   str(self._base_flag()), *exprs)
        self._db: Any = None
        self._leftover: list[LineFilteredRe] = []
        if not self._load(cache):
            self._compile(exprs)
            if cache is not None:
                cache.put(self.cache_key, self._dump())
        self._scratch = hyperscan.Scratch(self._db) if self._db is not None else None

    def _base_flag(self) -> int:
        return int(self._hs.HS_FLAG_MULTILINE)

    def _compile(self, exprs: list[bytes]) -> None:
        ids = list(range(len(exprs)))
        flags = [self._base_flag()] * len(exprs)
        db = self._hs.Database(mode=self._mode)
        if exprs and not self._compile_into(db, exprs, ids, flags):
            # Some pattern needs a weaker mode: find which, one by one (slow, so only when needed).
            kept: list[tuple[bytes, int, int]] = []
            for index, expr in enumerate(exprs):
                flag = self._flag_for(expr)
                if flag is None:
                    # Not expressible in Hyperscan even as a prefilter: scan this one with `re`.
                    self._leftover.append(LineFilteredRe(index, self._patterns[index]))
                else:
                    kept.append((expr, index, flag))
            exprs, ids, flags = [k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept]
            if exprs:
                db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
        self._db = db if exprs else None

    def _dump(self) -> bytes:
        header = {"leftover": [f.index for f in self._leftover]}
        body = bytes(self._hs.dumpb(self._db)) if self._db is not None else b""
        return json.dumps(header).encode() + b"\n" + body

    def _load(self, cache: BlobCache | None) -> bool:
        payload = cache.get(self.cache_key) if cache is not None else None
        if payload is None:
            return False
        head, _, body = payload.partition(b"\n")
        try:
            leftover = [int(i) for i in json.loads(head)["leftover"]]
            db = self._hs.loadb(body, self._mode) if body else None
        except (ValueError, KeyError, TypeError, IndexError, self._hs.error):
            return False  # written by something else: compile (and overwrite it) instead
        self._leftover = [LineFilteredRe(i, self._patterns[i]) for i in leftover]
        self._db = db
        return True

    def also_with_re(self, patterns: dict[int, str]) -> None:
        """Scan these patterns with `re` as well: Hyperscan was seen to miss them (see Matcher.self_check)."""
        self._leftover += [LineFilteredRe(index, pattern) for index, pattern in patterns.items()]

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
        if self._db is not None and buffer:
            ends: list[tuple[int, int]] = []

            def on_match(pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
                ends.append((pattern_id, end))

            self._db.scan(buffer, match_event_handler=on_match, scratch=self._scratch)
            for pattern_id, end in ends:
                # A match ending at a newline belongs to the line before it.
                at = end - 1 if end > 0 else 0
                found.setdefault(_line_start(buffer, at), set()).add(pattern_id)
        _scan_filtered(self._leftover, buffer, found)
        return found


def make_engine(patterns: Sequence[str], prefer: str = "auto", cache: BlobCache | None = None) -> Engine:
    """Hyperscan when it loads (or when asked), else ``re``. ``prefer``: auto | hyperscan | re."""
    if prefer == "re":
        return ReEngine(patterns)
    try:
        return HyperscanEngine(patterns, cache)
    except ImportError:
        if prefer == "hyperscan":
            raise
        return ReEngine(patterns)
