"""Multi-pattern scanning engines: find which patterns match in which lines of a byte buffer.

An engine is only a prefilter: it reports (pattern index, line start) candidates, and the final decision and the
captures always come from Python's ``re`` on the one decoded line (compiled with re.ASCII, as Hyperscan sees
bytes). So every engine yields identical findings; they differ only in speed.

- ``HyperscanEngine``: the whole catalog compiled once into one Hyperscan block-mode database; a pattern with a
  prefilter (a looser expression that matches wherever it does) is scanned for by its prefilter. Where it
  scans for a pattern exactly (see vouches), its candidacy is the decision on an ASCII line: `re` is asked only
  for captures, and a pattern without named groups has none.
- ``ReEngine``: the fallback where Hyperscan cannot load: one ``re`` scan per pattern over the buffer.
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from catalog import rewrite
from catalog.dbcache import BlobCache, cache_key
from catalog.literals import LineFilteredRe, line_start, literal_lines, scan_filtered
from catalog.native import built, linescan
from catalog.rewrite import hyperscan_expression, line_regex

CACHE_FORMAT = "hyperscan-db-3"  # bump when what the cache holds, or how the database is built, changes
EXPRESSIONS_FORMAT = "expressions-1"


class Engine(Protocol):
    name: str

    def candidates(self, buffer: bytes) -> dict[int, set[int]]:
        """Map each line start offset in ``buffer`` to the indexes of patterns that may match in that line, the
        keys in increasing order."""
        ...

    def vouches(self, index: int) -> bool:
        """Whether a candidate of pattern ``index`` in a line of ASCII text without a carriage return is certain
        to match it there, as `re` reads the line."""
        ...


class ReEngine:
    name = "re"

    def __init__(self, patterns: Sequence[str]) -> None:
        self._compiled = [line_regex(p) for p in patterns]

    def candidates(self, buffer: bytes) -> dict[int, set[int]]:
        found: dict[int, set[int]] = {}
        for index, rx in enumerate(self._compiled):
            for m in rx.finditer(buffer):
                found.setdefault(line_start(buffer, m.start()), set()).add(index)
        return dict(sorted(found.items()))

    def vouches(self, index: int) -> bool:
        return False  # the fallback keeps confirming every candidate: it only has to be right


def expressions(patterns: Sequence[str], cache: BlobCache | None) -> list[bytes]:
    """hyperscan_expression of each pattern, kept in ``cache`` under a hash of the patterns and of the rewriting
    code: rewriting the catalog's 628 patterns took 60 ms of every start-up, longer than loading the database."""
    if cache is None:
        return [hyperscan_expression(p) for p in patterns]
    key = cache_key(EXPRESSIONS_FORMAT, Path(rewrite.__file__ or "").read_bytes(), *patterns)
    payload = cache.get(key)
    if payload is not None:
        try:
            found = [bytes.fromhex(text) for text in json.loads(payload)]
        except (ValueError, TypeError):  # written by something else: rewrite (and overwrite it) instead
            found = []
        if len(found) == len(patterns):
            return found
    exprs = [hyperscan_expression(p) for p in patterns]
    cache.put(key, json.dumps([e.hex() for e in exprs]).encode())
    return exprs


class HyperscanEngine:
    """The whole catalog in one Hyperscan block-mode database. With a ``cache``, the compiled database (and which
    patterns Hyperscan cannot take) is stored under a hash of the expressions and reloaded on the next start."""

    name = "hyperscan"

    def __init__(self, patterns: Sequence[str], cache: BlobCache | None = None,
                 prefilters: Mapping[int, str] | None = None, library: Any = None) -> None:
        """``library``: a module with python-hyperscan's API (catalog._linescan has it); python-hyperscan itself
        when None."""
        if library is None:
            import hyperscan as library  # imported here so that a missing or broken library leaves re usable

        self._hs = hyperscan = library
        self._mode = hyperscan.HS_MODE_BLOCK
        self._patterns = list(patterns)
        self._cache = cache
        given = [(prefilters or {}).get(i, p) for i, p in enumerate(patterns)]
        self._own = [expr == p for expr, p in zip(given, patterns, strict=True)]  # not a looser expression of it
        self._exprs = expressions(given, cache)
        self.cache_key = cache_key(CACHE_FORMAT, hyperscan.__name__, str(getattr(hyperscan, "__version__", "?")),
                                   platform.machine(),
                                   str(self._base_flag()), *self._exprs)
        self._db: Any = None
        self._flags: dict[int, int] = {}  # pattern index -> flag, for every pattern in the database
        self._leftover: list[LineFilteredRe] = []
        self._literal_ids: dict[int, bytes] = {}  # extra database ids -> the rescued patterns' literals they find
        if not self._load(cache):
            self._compile()
            if cache is not None:
                cache.put(self.cache_key, self._dump({"flags": self._flags}))
        self._leftover = [LineFilteredRe(i, line_regex(p)) for i, p in enumerate(patterns) if i not in self._flags]
        self._scratch: Any = hyperscan.Scratch(self._db) if self._db is not None else None

    def _base_flag(self) -> int:
        return int(self._hs.HS_FLAG_MULTILINE)

    def vouches(self, index: int) -> bool:
        """True for a pattern in the database in exact mode (not as a prefilter, not for a looser expression of
        it), not rescued with `re` (the self-check saw Hyperscan miss it), and line-confined (rewrite.py): then
        Hyperscan's match in a line and `re`'s search of the line's text agree wherever the text is the line's
        bytes (ASCII, no trailing CR). Asked once a pattern, when its confirmation is first built."""
        pattern = self._patterns[index]
        return (self._flags.get(index) == self._base_flag() and self._own[index]
                and all(scan.index != index for scan in self._leftover) and rewrite.line_confined(pattern))

    def _compile(self) -> None:
        flags = dict.fromkeys(range(len(self._exprs)), self._base_flag())
        db = self._build(flags)
        if db is None and self._exprs:
            # Some pattern needs a weaker mode: find which, one by one (slow, so only when needed). A pattern that
            # is not expressible in Hyperscan even as a prefilter is scanned with `re`.
            found = {i: self._flag_for(expr) for i, expr in enumerate(self._exprs)}
            flags = {i: flag for i, flag in found.items() if flag is not None}
            db = self._build(flags)
        self._db, self._flags = (db, flags) if db is not None else (None, {})

    def _build(self, flags: dict[int, int], extra: Sequence[bytes] = ()) -> Any:
        """A database of the patterns in ``flags`` plus ``extra`` expressions (ids after the patterns'), or None."""
        ids = [*flags, *range(len(self._exprs), len(self._exprs) + len(extra))]
        if not ids:
            return None
        exprs = [*(self._exprs[i] for i in flags), *extra]
        db = self._hs.Database(mode=self._mode)
        try:
            db.compile(expressions=exprs, ids=ids, elements=len(exprs),
                       flags=[*flags.values(), *[self._base_flag()] * len(extra)])
        except self._hs.error:
            return None
        return db

    def _dump(self, header: dict[str, Any]) -> bytes:
        body = bytes(self._hs.dumpb(self._db)) if self._db is not None else b""
        return json.dumps(header).encode() + b"\n" + body

    def _read(self, key: str) -> tuple[dict[str, Any], Any] | None:
        """The header and database stored under ``key``, or None when absent or unreadable."""
        payload = self._cache.get(key) if self._cache is not None else None
        if payload is None:
            return None
        head, _, body = payload.partition(b"\n")
        try:
            header = json.loads(head)
            db = self._hs.loadb(body, self._mode) if body else None
        except (ValueError, TypeError, self._hs.error):
            return None  # written by something else: compile (and overwrite it) instead
        return (header, db) if isinstance(header, dict) else None

    def _load(self, cache: BlobCache | None) -> bool:
        stored = self._read(self.cache_key)
        try:
            flags = {int(i): int(f) for i, f in stored[0]["flags"].items()} if stored else None
        except (KeyError, TypeError, ValueError, AttributeError):
            flags = None
        if stored is None or flags is None or not all(0 <= i < len(self._exprs) for i in flags):
            return False
        self._db, self._flags = stored[1], flags
        return True

    def also_with_re(self, patterns: dict[int, str], probe: bytes = b"",
                     reference: Callable[[], dict[int, set[int]]] | None = None) -> None:
        """Scan these patterns with `re` as well: Hyperscan was seen to miss them (see Matcher.self_check). Their
        required literals join the database, so finding the lines to run `re` on costs no extra pass; that
        database is used only once it finds, on ``probe``, every literal and everything ``reference`` (the `re`
        engine's candidates on ``probe``) finds outside these patterns."""
        self._leftover += [LineFilteredRe(index, line_regex(p)) for index, p in patterns.items()]
        literals = sorted({s.literal for s in self._leftover if s.literal is not None})
        if not literals or self._db is None:
            return
        key = cache_key(self.cache_key, "literals-1", *literals, *map(str, sorted(patterns)))
        stored = self._read(key)
        if stored is None and reference is not None:
            stored = self._verified_with(literals, set(patterns), probe, reference())
            if self._cache is not None and stored[1] is not None:
                self._cache.put(key, json.dumps(stored[0]).encode() + b"\n" + bytes(self._hs.dumpb(stored[1])))
        if stored is None or stored[1] is None:
            return
        header, db = stored
        base = len(self._exprs)
        self._literal_ids = {base + k: lit for k, lit in enumerate(literals) if lit.hex() in header.get("found", [])}
        if self._literal_ids:
            self._db, self._scratch = db, self._hs.Scratch(db)

    def _verified_with(self, literals: list[bytes], rescued: set[int], probe: bytes,
                       reference: dict[int, set[int]]) -> tuple[dict[str, Any], Any]:
        db = self._build(self._flags, [re.escape(lit) for lit in literals])
        if db is None:
            return {}, None
        hits: dict[int, set[int]] = {}
        for pattern_id, end in self._scan(db, self._hs.Scratch(db), probe):
            hits.setdefault(pattern_id, set()).add(line_start(probe, end - 1 if end > 0 else 0))
        if any(start not in hits.get(i, ()) for start, ids in reference.items() for i in ids - rescued
               if i in self._flags):
            return {}, None  # the bigger database drops something the first one found: keep the first
        base = len(self._exprs)
        found = [lit.hex() for k, lit in enumerate(literals)
                 if {start for start, _ in literal_lines(probe, lit)} <= hits.get(base + k, set())]
        return {"found": found}, db

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

    @staticmethod
    def _scan(db: Any, scratch: Any, buffer: bytes) -> list[tuple[int, int]]:
        ends: list[tuple[int, int]] = []

        def on_match(pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
            ends.append((pattern_id, end))

        db.scan(buffer, match_event_handler=on_match, scratch=scratch)
        return ends

    def _found(self, buffer: bytes) -> tuple[dict[int, set[int]], dict[bytes, list[int]]]:
        """What the database finds in ``buffer``: {line start: pattern indexes} in line order, and for each
        rescued pattern's literal the starts of the lines holding it."""
        found: dict[int, set[int]] = {}
        literal_hits: dict[bytes, list[int]] = {}
        literal_ids = self._literal_ids
        rfind = buffer.rfind
        get = found.get

        def on_match(pattern_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
            # A match ending at a newline belongs to the line before it.
            start = rfind(b"\n", 0, end - 1) + 1 if end > 1 else 0
            if pattern_id in literal_ids:
                literal_hits.setdefault(literal_ids[pattern_id], []).append(start)
            elif (ids := get(start)) is not None:
                ids.add(pattern_id)
            else:
                found[start] = {pattern_id}

        self._db.scan(buffer, match_event_handler=on_match, scratch=self._scratch)
        return found, literal_hits

    def candidates(self, buffer: bytes) -> dict[int, set[int]]:
        found, literal_hits = self._found(buffer) if self._db is not None and buffer else ({}, {})
        for literal in self._literal_ids.values():
            literal_hits.setdefault(literal, [])
        # Hyperscan reports matches by increasing end offset, so the lines came in order; only lines that the
        # `re`-scanned patterns alone found can be out of it.
        lines = len(found)
        scan_filtered(self._leftover, buffer, found, literal_hits)
        return found if len(found) == lines else dict(sorted(found.items()))


class LibhsEngine(HyperscanEngine):
    """HyperscanEngine on catalog._linescan: the system's libhs, with the line loop in C. Besides candidates it
    offers spans (see Matcher.spans): the memo lookup of every matched line in C as well, so that Python runs
    only for a line not seen before."""

    name = "libhs"

    def __init__(self, patterns: Sequence[str], cache: BlobCache | None = None,
                 prefilters: Mapping[int, str] | None = None) -> None:
        # Built only where libhs's headers were (setup.py), and switched off by FIRSTFAULT_NATIVE=0 (native.py)
        library = linescan()
        if library is None:
            why = "switched off (FIRSTFAULT_NATIVE=0)" if built() is not None else "not built"
            raise ImportError(f"catalog._linescan is {why}")
        super().__init__(patterns, cache, prefilters, library=library)

    def _lines(self, buffer: bytes) -> Any:
        """The database's matches in ``buffer`` filed by line (ids past the patterns' are rescue literals)."""
        return self._db.lines(buffer, self._scratch, len(self._exprs))

    def _found(self, buffer: bytes) -> tuple[dict[int, set[int]], dict[bytes, list[int]]]:
        lines = self._lines(buffer)
        return lines.candidates(), self._literal_hits(lines)

    def _literal_hits(self, lines: Any) -> dict[bytes, list[int]]:
        hits: dict[bytes, list[int]] = {literal: [] for literal in self._literal_ids.values()}
        for pattern_id, starts in lines.extra_hits().items():
            hits[self._literal_ids[pattern_id]] = starts
        return hits

    def spans(self, buffer: bytes, memo: dict[Any, Any], resolve: Callable[..., Any],
              siblings: Mapping[int, tuple[tuple[bytes, ...], bytes]] | None = None, limit: int = 1 << 30,
              own: tuple[Any, ...] | None = None, skip: tuple[dict[int, list[Any]], dict[int, list[Any]]] | None = None,
              direct: tuple[Any, ...] | None = None) -> Iterable[Any] | None:
        """(start, end, match) for each candidate line whose match is not None, in order; None when the database
        cannot scan (every pattern is scanned with `re`). A line's match is memo[line], else, for a line only a
        pattern of ``siblings`` (index -> Volatile.literals) may match, memo[its sibling key], else
        resolve(line, start, end, pattern indexes, the key looked up). A sibling found is remembered under its
        line's bytes too, the memo cleared first once it holds ``limit`` keys. With ``own`` (LineMatch, sibling
        kinds, MAX_LINE_CHARS, truncation suffix), each line's own LineMatch instead, as Matcher.match gives. With
        ``skip`` (counts, touched), an iterator that leaves out the lines whose match has an entry in counts
        ({id(match): [match, _, count, start, end]}), counting them there instead (see Matcher.spans). With
        ``direct``, match_line's last arguments (see catalog.matcher), the C loop matches a new line itself as
        ``resolve`` would, without calling it."""
        if self._db is None:
            return None
        lines = self._lines(buffer)
        extra = None
        if self._leftover:
            found: dict[int, set[int]] = {}
            scan_filtered(self._leftover, buffer, found, self._literal_hits(lines))
            extra = sorted(found.items())
        if skip is not None:  # one at a time, skipping the lines of skip's matches (see _linescan_walk.h)
            walk: Iterable[Any] = lines.iter_spans(memo, resolve, extra, siblings, limit, *skip, direct)
            return walk
        spans: list[Any] = lines.spans(memo, resolve, extra, siblings, limit, own, direct)
        return spans


def make_engine(patterns: Sequence[str], prefer: str = "auto", cache: BlobCache | None = None,
                prefilters: Mapping[int, str] | None = None) -> Engine:
    """The first engine that loads of libhs (the C line loop, where catalog/native.py's switch has it on),
    python-hyperscan and ``re``; or the one asked for. ``prefer``: auto | libhs | hyperscan | re. ``prefilters``
    (pattern index -> looser expression) are for Hyperscan only: `re` scans for the patterns themselves."""
    if prefer == "re":
        return ReEngine(patterns)
    for name, engine in (("libhs", LibhsEngine), ("hyperscan", HyperscanEngine)):
        if prefer not in ("auto", name):
            continue
        try:
            return engine(patterns, cache, prefilters)
        except ImportError:
            if prefer == name:
                raise
    return ReEngine(patterns)
