"""The catalog compiled once into one multi-pattern scanner.

``Matcher.match(buffer)`` returns, for each line of a byte buffer that some pattern matches, the best catalog
entry for it and its named captures, plus any context patterns (rank maps, tables) that matched the line.
Python only touches the lines the engine reports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from catalog.dbcache import BlobCache, cache_key
from catalog.engine import Engine, ReEngine, make_engine
from catalog.loader import Catalog
from catalog.model import Signature
from catalog.native import linescan
from catalog.rewrite import confirm_regex
from catalog.siblings import Volatile, sibling_key

MAX_LINE_CHARS = 8192  # longer lines are matched in full but kept truncated as evidence
LINE_MEMO = 4096  # distinct lines a caller's memo holds before it starts again
_UNSEEN: Any = object()
# A caller's memo of matched lines: by a line's bytes, or by (pattern index, its bytes with the volatile digits
# zeroed) for a sibling; a tuple never equals bytes, so a line and a sibling key never collide.
Skip = tuple[dict[int, list[Any]], dict[int, list[Any]]]  # (counts, touched): see Matcher.spans
Memo = dict[bytes | tuple[int, bytes], "LineMatch | None"]
# What spans calls for a line its memo lacks: (line, start, end, pattern indexes, the key already looked up or None)
Resolve = Callable[[bytes, int, int, Collection[int], "bytes | tuple[int, bytes] | None"], "LineMatch | None"]


# How match_line confirms one pattern: its regex's search, whether it runs on the lowercased line (see folded), the
# entry it belongs to (None for a context pattern), the context pattern's name, the entry's specificity, and
# whether the engine's candidacy decides on a line that is its own bytes (Engine.vouches: then, without named
# groups, nothing is left for `re` to read).
_Confirm = tuple[Callable[[str], "re.Match[str] | None"], bool, "Signature | None", str, tuple[int, int, int], bool]
_VOUCHED = re.compile("").match("")  # what a vouched pattern's line reads as: a match without groups


class LineMatch(NamedTuple):  # a tuple: made once per matched line, and faster to make than a frozen dataclass
    start: int  # offset of the line in the buffer
    end: int  # offset of its newline (or the buffer's end)
    text: str
    signature: Signature | None
    fields: dict[str, Any]
    context: dict[str, dict[str, Any]]  # context pattern name -> captures


# One token at a time, escapes first: an escaped character (`\[`, `\.`) is a literal, never the start of a class,
# and the class alternative cannot also take a backslash, so no input makes it backtrack exponentially.
_TOKENS = re.compile(r"\\[dDsSwWbBAZz]|\(\?P<\w+>|\(\?[:i]|(?:\\.|[^\\])\?|\\(?P<escaped>.)|\[(?:\\.|[^\]\\])*\]"
                     r"|\{\d*,?\d*\}|[()|+*?^$.]|(?P<plain>.)", re.S)


def literal_length(regex: str) -> int:
    """How many characters a pattern pins down: literals count, classes, optionals and quantifiers do not."""
    return sum(1 for m in _TOKENS.finditer(regex) if m.group("escaped") is not None or m.group("plain") is not None)


def specificity(sig: Signature, regex: str) -> tuple[int, int, int]:
    """A specific entry beats a generic one; among equals the pattern that pins down more text wins."""
    return (0 if sig.generic else 1, literal_length(regex), len(regex))


def _cached_indexes(cache: BlobCache | None, key: str, limit: int) -> list[int] | None:
    """A list of pattern indexes stored under ``key``, or None when absent or not readable as one."""
    payload = cache.get(key) if cache is not None else None
    if payload is None:
        return None
    try:
        indexes = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(indexes, list) or not all(isinstance(i, int) and 0 <= i < limit for i in indexes):
        return None
    return indexes


_CASELESS_ESCAPES = re.compile(r"\\[SDWBAZ]")
_CODE_ESCAPE = re.compile(r"\\[xu0-9]")  # \x41 is "A": it would not match the lowercased "a"
_FLAG_OR_NAMED_GROUP = re.compile(r"\(\?(?!:)")


_TRUNCATED = " …[truncated]"
_new_match = tuple.__new__


def _kept_text(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + _TRUNCATED


def line_text(raw: bytes) -> str:
    """A line's text as a LineMatch holds it (``raw`` without its newline)."""
    return _kept_text(raw.decode("utf-8", "replace").rstrip("\r"))


def _python_captures(m: re.Match[str]) -> dict[str, Any]:
    """The named groups that took part, those of up to 12 decimal digits (a sign allowed) as ints."""
    found: dict[str, Any] = m.groupdict()
    dropped = False
    for key, value in found.items():  # values replaced in place: a new dict per match costs more
        if value is None:
            dropped = True
        elif value.isdecimal():  # what `\d` matches in a str pattern: every such run converts with int()
            if len(value) <= 12:
                found[key] = int(value)
        elif value[:1] == "-" and len(value) <= 13 and value[1:].isdecimal():
            found[key] = int(value)
    return {k: v for k, v in found.items() if v is not None} if dropped else found


def _captures_now() -> Callable[[re.Match[str]], dict[str, Any]]:
    """_python_captures, in C where the C loop is enabled (catalog/native.py: 0.4 us a match instead of 1.0, and
    every confirmed line takes one); the two agree on every string (tests/unit/test_captures.py)."""
    module = linescan()
    return _python_captures if module is None else module.captures


def _match_line_now() -> Callable[..., LineMatch | None] | None:
    """Matcher.match_line's loop in C where the C loop is enabled: the regex searches stay `re`'s, the loop
    around them (a microsecond a line) goes. Equal to the Python loop (tests/unit/test_native_match.py)."""
    module = linescan()
    return None if module is None else module.match_line


def folded(pattern: str) -> str | None:
    """For a case-insensitive ``(?i)`` pattern without captures or other flags whose letters are all lowercase:
    the same pattern without ``(?i)``, which matches the lowercased line exactly when the pattern matches the line
    (an ASCII line: `re.ASCII` folds ASCII letters only). Python's `re` skips ahead by the first characters of a
    case-sensitive pattern but not of a caseless one: `errorish` confirms 3x faster this way."""
    if not pattern.startswith("(?i)") or not pattern.isascii():
        return None
    body = pattern[4:]
    if "\\\\" in body or _FLAG_OR_NAMED_GROUP.search(body) or _CODE_ESCAPE.search(body):
        return None
    if re.search("[A-Z]", _CASELESS_ESCAPES.sub("", body)):
        return None
    return body


class Matcher:
    def __init__(self, catalog: Catalog, context: Mapping[str, str] | None = None, engine: str = "auto",
                 cache: BlobCache | None = None, context_prefilters: Mapping[str, str] | None = None,
                 context_volatile: Mapping[str, Volatile] | None = None,
                 context_examples: Mapping[str, Sequence[str]] | None = None) -> None:
        """``cache``, if given, keeps the compiled scanner and the self-check's verdict between runs.
        ``context_examples``: lines the context patterns find, scanned by the self-check with the catalog's.
        ``context_prefilters``: for some context patterns, what the engine scans for instead (see prefilter).
        ``context_volatile``: for some context patterns, where their lines hold digits that nothing reads
        (see spans)."""
        self.catalog = catalog
        self._owners: list[tuple[Signature | None, str]] = []  # pattern index -> (entry, context name)
        self._patterns: list[str] = []
        prefilters: dict[int, str] = {}  # pattern index -> the looser expression the engine scans for
        for sig in catalog.signatures:
            for fp in sig.fingerprints:
                if fp.prefilter is not None:
                    prefilters[len(self._patterns)] = fp.prefilter
                self._owners.append((sig, ""))
                self._patterns.append(fp.regex)
        self._sibling_masks: dict[int, Volatile] = {}  # pattern index -> where its lines vary meaninglessly
        for name, regex in (context or {}).items():
            if context_prefilters and name in context_prefilters:
                prefilters[len(self._patterns)] = context_prefilters[name]
            if context_volatile and name in context_volatile:
                self._sibling_masks[len(self._patterns)] = context_volatile[name]
            self._owners.append((None, name))
            self._patterns.append(regex)
        self._sibling_kinds = frozenset(self._owners[i][1] for i in self._sibling_masks)
        self._sibling_literals = {i: v.literals for i, v in self._sibling_masks.items()}  # for the C line loop
        # Compiled on first use: a scan asks for the few patterns that have candidates, not all of them.
        self._line_regex: list[re.Pattern[str] | None] = [None] * len(self._patterns)
        self._folded = [folded(p) for p in self._patterns]
        self._confirms: list[_Confirm | None] = [None] * len(self._patterns)  # made on first use: _confirmer
        self.engine: Engine = make_engine(self._patterns, engine, cache, prefilters)
        self.rescued = self._self_check(cache, [ex for lines in (context_examples or {}).values() for ex in lines])

    def _self_check(self, cache: BlobCache | None, context_examples: Sequence[str] = ()) -> int:
        """Scan every positive example with the engine and with `re`; patterns the engine misses are scanned with
        `re` too. Hyperscan 5.4 (python-hyperscan 0.9.1) drops `\\[(\\d+)\\] finished collective #..., but didn't
        join` when `... joined but didn't finish` is in the same database: the catalog's examples catch such bugs.
        The verdict depends only on the engine's database and the examples, so it is cached under both."""
        rescue = getattr(self.engine, "also_with_re", None)
        if rescue is None:
            return 0
        lines = [ex for sig in self.catalog.signatures for ex in sig.examples.positive] + list(context_examples)
        key = cache_key("self-check-1", getattr(self.engine, "cache_key", ""), *self._patterns, "", *lines)
        probe = b"".join(b"x\n" + line.encode() + b"\n" for line in lines)
        computed: list[dict[int, set[int]]] = []

        def reference() -> dict[int, set[int]]:
            if not computed:
                computed.append(ReEngine(self._patterns).candidates(probe))
            return computed[0]

        missed = _cached_indexes(cache, key, len(self._patterns))
        if missed is None:
            found = self.engine.candidates(probe)
            missed = sorted({i for start, ids in reference().items() for i in ids - found.get(start, set())})
            if cache is not None:
                cache.put(key, json.dumps(missed).encode())
        rescue({i: self._patterns[i] for i in missed}, probe, reference)
        return len(missed)

    def _regex(self, index: int) -> re.Pattern[str]:
        rx = self._line_regex[index]
        if rx is None:
            rx = self._line_regex[index] = confirm_regex(self._folded[index] or self._patterns[index])
        return rx

    @property
    def pattern_count(self) -> int:
        return len(self._patterns)

    @property
    def patterns(self) -> list[str]:
        """Every pattern the engine scans for, in index order: catalog fingerprints, then context patterns."""
        return list(self._patterns)

    def match(self, buffer: bytes, memo: Memo | None = None) -> list[LineMatch]:
        """Each matched line of ``buffer`` in order, with its own offsets and its own text."""
        native = self._native(buffer, memo, own=True)
        if native is not None:
            own: list[LineMatch] = native  # type: ignore[assignment]  # a list: without skip, spans makes one
            return own
        new = tuple.__new__  # a LineMatch from a shared one's fields: skips the NamedTuple constructor's frame
        out: list[LineMatch] = []
        for start, end, lm in self.spans(buffer, memo):
            if lm[0] == start:
                out.append(lm)
            elif self.may_be_sibling(lm):
                out.append(new(LineMatch, (start, end, line_text(buffer[start:end]), *lm[3:])))
            else:
                out.append(new(LineMatch, (start, end, *lm[2:])))
        return out

    def _native(self, buffer: bytes, memo: Memo | None, own: bool, skip: Skip | None = None
                ) -> Iterable[Any] | None:
        """spans, or with ``own`` match, from the engine's C line loop; None where the engine has none."""
        native = getattr(self.engine, "spans", None)
        match_line = _match_line_now()  # None where the switch says Python: then so is the line loop
        if native is None or match_line is None:
            return None
        siblings = self._sibling_literals if memo is not None else None
        own_spec = (LineMatch, self._sibling_kinds, MAX_LINE_CHARS, _TRUNCATED) if own else None
        # With the C match_line, the C line loop calls it itself for a new line, as the resolver would.
        direct = (self._confirms, self._confirmer, self._caseless_search, LineMatch, MAX_LINE_CHARS, _kept_text)
        resolve = self._resolver_with(memo, match_line)
        found: Iterable[Any] | None = native(buffer, {} if memo is None else memo, resolve, siblings, LINE_MEMO,
                                             own_spec, skip if memo is not None else None, direct)
        return found

    @property
    def sibling_kinds(self) -> frozenset[str]:
        """The context kinds whose lines may share one LineMatch (see may_be_sibling)."""
        return self._sibling_kinds

    def may_be_sibling(self, lm: LineMatch) -> bool:
        """Whether ``lm`` may stand for lines other than its own (siblings: see spans), so that its text may not
        be theirs."""
        return lm[3] is None and bool(self._sibling_kinds) and not self._sibling_kinds.isdisjoint(lm[5])

    def spans(self, buffer: bytes, memo: Memo | None = None, skip: Skip | None = None
              ) -> Iterable[tuple[int, int, LineMatch]]:
        """(start, end, match) for each matched line of ``buffer``, in order.

        ``memo``, kept by the caller across the buffers of one source: logs repeat lines verbatim (NCCL's
        channel lines at every communicator set-up, a warning every step), and what matches in a line depends on
        its bytes alone (every pattern is confined to one line), so a repeated line is decoded and confirmed once
        and its spans share that first LineMatch object (whose own start and end are its first occurrence's).
        Readers must not mutate it.

        With a memo, siblings share one too: lines that only one volatile context pattern can match (the engine's
        candidates) and that differ only in the digits of its volatile group, which no capture, speaker or time
        stamp reads (NCCL prints one line per channel that differ only in the channel's number). A shared match's
        text is its first line's: a reader that keeps a line's own text reads it from the buffer (line_text).

        ``skip`` (counts, touched), with a memo: where the engine's C line loop runs, the lines whose match has an
        entry [match, _, count, start, end] in counts ({id(match): entry}), even one added while the caller walks,
        are left out and counted in it instead (count + 1, start and end the line's, touched[id(entry)] = entry).
        Elsewhere every line is given: the caller treats the skipped ones as the C loop would."""
        native = self._native(buffer, memo, own=False, skip=skip)
        if native is not None:
            spans: Iterable[tuple[int, int, LineMatch]] = native
            return spans
        seen: Memo = {} if memo is None else memo
        resolve = self._resolver(memo)
        out: list[tuple[int, int, LineMatch]] = []
        append, find, size = out.append, buffer.find, len(buffer)
        get = seen.get
        for start, indexes in self.engine.candidates(buffer).items():
            end = find(b"\n", start)
            if end < 0:
                end = size
            raw = buffer[start:end]
            lm = get(raw, _UNSEEN)  # a repeat, most often: NCCL prints its set-up again at every communicator
            if lm is _UNSEEN:
                lm = resolve(raw, start, end, indexes, None)
            if lm is not None:
                append((start, end, lm))
        return out

    def _resolver(self, memo: Memo | None) -> Resolve:
        """What spans does with a line its memo does not hold: look up its sibling key (unless the C line loop
        did: then ``key`` is what it looked up), else match it; and remember it under both (with a memo)."""
        return self._resolver_with(memo, _match_line_now())  # once a buffer: the switch is read when work starts

    def _resolver_with(self, memo: Memo | None, native: Callable[..., LineMatch | None] | None) -> Resolve:
        """_resolver, given what _match_line_now() said for this buffer (read once a buffer: it reads the
        environment, a microsecond a call, and a rank's log is one buffer)."""
        volatile = self._sibling_masks if memo is not None else {}  # no memo, no siblings
        remembered: Memo = memo if memo is not None else {}  # where sibling keys are looked up
        match_line = self.match_line
        captures = _python_captures if native is None else None
        confirms, confirmer, caseless = self._confirms, self._confirmer, self._caseless_search

        def resolve(raw: bytes, start: int, end: int, indexes: Collection[int],
                    key: bytes | tuple[int, bytes] | None) -> LineMatch | None:
            lm = _UNSEEN
            if key is None:
                key = raw
                if volatile and len(indexes) == 1:
                    (only,) = indexes
                    if only in volatile:
                        key = sibling_key(only, volatile[only], raw)
                        lm = remembered.get(key, _UNSEEN)
            if lm is _UNSEEN:
                text = raw.decode("utf-8", "replace").rstrip("\r")
                if native is not None:  # match_line's loop in C, called here without a Python frame between
                    lm = native(text, indexes, confirms, confirmer, caseless, start, end, LineMatch, MAX_LINE_CHARS,
                                _kept_text)
                else:
                    lm = match_line(text, indexes, start, end, captures)
            if memo is not None:
                if len(memo) >= LINE_MEMO:
                    memo.clear()
                memo[raw] = memo[key] = lm
            return lm  # type: ignore[no-any-return]

        return resolve

    def _confirmer(self, index: int) -> _Confirm:
        sig, ctx_name = self._owners[index]
        rank = specificity(sig, self._patterns[index]) if sig is not None else (0, 0, 0)
        regex = self._regex(index)
        vouched = not regex.groupindex and getattr(self.engine, "vouches", bool)(index) is True
        confirm = self._confirms[index] = (regex.search, self._folded[index] is not None, sig, ctx_name, rank, vouched)
        return confirm

    def _caseless_search(self, index: int, text: str) -> re.Match[str] | None:
        """A folded pattern on a line that is not ASCII: its own case-insensitive form (lowercasing is not
        enough beyond ASCII)."""
        return re.compile(self._patterns[index], re.ASCII).search(text)

    def match_line(
        self, text: str, indexes: Collection[int], start: int = 0, end: int = 0,
        captures: Callable[[re.Match[str]], dict[str, Any]] | None = None,
    ) -> LineMatch | None:
        """The best entry and the context patterns that ``text`` matches among the patterns ``indexes`` (the
        engine's candidates in ``buffer[start:end]``: a tuple in increasing order, or any collection, which is
        sorted). ``captures``: how a match's groups are read, by default as the switch (catalog/native.py) says."""
        captures = captures or _captures_now()
        best: tuple[int, int, int] | None = None  # the rank of the best entry so far
        sig: Signature | None = None
        fields: dict[str, Any] = {}
        context: dict[str, dict[str, Any]] = {}
        lowered: str | None = None  # the line lowercased, once, if a folded pattern asks
        confirms = self._confirms
        # in index order, so that the first of equally specific entries wins (the C loop's tuples come sorted)
        own = end - start == len(text) > 0 and text.isascii()  # these are the bytes the engine vouched for
        for index in indexes if type(indexes) is tuple else sorted(indexes):
            search, folded, owner, ctx_name, rank, vouched = confirms[index] or self._confirmer(index)
            if vouched and own:
                m: re.Match[str] | None = _VOUCHED
            elif not folded:
                m = search(text)
            elif text.isascii():
                if lowered is None:
                    lowered = text.lower()
                m = search(lowered)
            else:
                m = self._caseless_search(index, text)
            if m is None:
                continue  # the engine was a prefilter here
            if owner is None:
                context[ctx_name] = captures(m)
            elif best is None or rank > best:
                best, sig, fields = rank, owner, captures(m)
        if sig is None and not context:
            return None
        if len(text) > MAX_LINE_CHARS:
            text = _kept_text(text)
        return _new_match(LineMatch, (start, end, text, sig, fields, context))  # no NamedTuple __new__ frame

    def match_text(self, text: str) -> LineMatch | None:
        """Match one line of text against every pattern (the catalog examples and `catalog search` use this)."""
        return self.match_line(text, range(len(self._patterns)))
