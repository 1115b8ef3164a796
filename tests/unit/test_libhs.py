"""libhs's C line loop (catalog._linescan) files matches under the same lines, and gives the same spans, as the
Python paths it replaces; bad input raises, never crashes; without it firstfault falls back."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest

from catalog.engine import HyperscanEngine, LibhsEngine, ReEngine, make_engine
from catalog.literals import LineFilteredRe
from catalog.loader import default_catalog
from catalog.rewrite import line_regex
from catalog.siblings import Volatile, sibling_key
from scan.engine import build_matcher
from tests.unit.hs_engines import require

require("libhs")
from catalog import _linescan  # type: ignore[attr-defined]  # noqa: E402

ALPHABET = [b"a", b"b", b"c", b"d", b"\n", b"\n", b"\r", b"\x00", b"\xff", b" "]


def _random_buffers(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    return [b"".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 300))) for _ in range(count)]


def _python_rule(db: Any, buffer: bytes) -> dict[int, set[int]]:
    """The Python engine's rule, on the same database's match events: a match belongs to the line of its last
    byte, except that one ending with a newline belongs to the line before."""
    found: dict[int, set[int]] = {}

    def on_match(pattern_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
        start = buffer.rfind(b"\n", 0, end - 1) + 1 if end > 1 else 0
        found.setdefault(start, set()).add(pattern_id)

    if buffer:
        db.scan(buffer, match_event_handler=on_match, scratch=_linescan.Scratch(db))
    return dict(sorted(found.items()))


def test_matches_are_filed_under_the_lines_the_python_rule_gives() -> None:
    exprs = [b"ab", b"b\n", b"\n\n", b"^c", b"d$", b"[^\n]{3}$", b"a[^\n]*d", b"\\x00", b"\r\n?"]
    db = _linescan.Database(mode=_linescan.HS_MODE_BLOCK)
    db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs),
               flags=[_linescan.HS_FLAG_MULTILINE] * len(exprs))
    scratch = _linescan.Scratch(db)
    nonempty = 0
    for buffer in _random_buffers(seed=7, count=400):
        expected = _python_rule(db, buffer)
        nonempty += bool(expected)
        assert db.lines(buffer, scratch).candidates() == expected, buffer
    assert nonempty > 300  # the buffers exercise the rule


def test_ids_from_the_first_extra_are_kept_apart_as_literal_hits() -> None:
    db = _linescan.Database()
    db.compile(expressions=[b"foo", b"bar"], ids=[0, 9], elements=2, flags=[_linescan.HS_FLAG_MULTILINE] * 2)
    lines = db.lines(b"foo bar\nbar\nfoo\n", _linescan.Scratch(db), 9)
    assert lines.candidates() == {0: {0}, 12: {0}}  # a line holding only an extra id is not a line
    assert lines.extra_hits() == {9: [0, 8]}


def _patterns() -> list[str]:
    return [r"alpha (?P<n>\d+)", r"beta\b", r"(?i)gamma", r"^delta$", r"eps[^\n]*lon"]


def _text_buffers(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    words = ["alpha 12", "alpha x", "beta", "betamax", "GAMMA", "delta", "epsilon", "eps lon", "zeta 3", "noise",
             "\xe9t\xe9", "\x00"]
    out = []
    for _ in range(60):
        lines = [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 4))) for _ in range(rng.randrange(40))]
        out.append("\n".join(lines).encode() + (b"\n" if rng.random() < 0.5 else b"") + b"\xff\xfe" * rng.randrange(2))
    return out


def _with_leftover(engine: HyperscanEngine) -> HyperscanEngine:
    # zeta is scanned only with `re` (as a pattern Hyperscan drops would be), under an index the database lacks
    engine._leftover = [LineFilteredRe(5, line_regex(r"zeta \d")), LineFilteredRe(1, line_regex(r"beta\b"))]
    return engine


def test_spans_merge_the_lines_only_re_finds_in_order() -> None:
    fast = _with_leftover(LibhsEngine(_patterns()))
    python = _with_leftover(HyperscanEngine(_patterns()))
    merged = 0
    for buffer in _text_buffers(seed=3):
        candidates = python.candidates(buffer)
        assert fast.candidates(buffer) == candidates
        expected = [(s, e if (e := buffer.find(b"\n", s)) >= 0 else len(buffer), tuple(sorted(ids)))
                    for s, ids in candidates.items()]
        spans = fast.spans(buffer, {}, lambda raw, start, end, ids, key: (raw, ids))
        assert spans is not None
        assert [(s, e, ids) for s, e, (_raw, ids) in spans] == expected
        assert all(raw == buffer[s:e] for s, e, (raw, _ids) in spans)
        merged += sum(5 in ids for _, _, ids in expected)
    assert merged > 20  # lines found by `re` alone were merged


def test_a_line_in_the_memo_is_not_resolved_and_none_drops_it() -> None:
    engine = LibhsEngine(_patterns())
    buffer = b"alpha 1\nbeta\nalpha 1\ndelta\n"
    calls: list[bytes] = []

    def resolve(raw: bytes, start: int, end: int, ids: tuple[int, ...], key: object) -> object:
        calls.append(raw)
        memo[raw] = None if raw == b"delta" else raw.upper()
        return memo[raw]

    memo: dict[Any, Any] = {b"beta": "known"}
    assert engine.spans(buffer, memo, resolve) == [(0, 7, b"ALPHA 1"), (8, 12, "known"), (13, 20, b"ALPHA 1")]
    assert calls == [b"alpha 1", b"delta"]


def test_an_error_in_resolve_propagates() -> None:
    engine = LibhsEngine(_patterns())

    def resolve(raw: bytes, start: int, end: int, ids: tuple[int, ...], key: object) -> object:
        raise KeyError(raw)

    with pytest.raises(KeyError):
        engine.spans(b"noise\nbeta\n", {}, resolve)


def test_bad_input_raises_the_module_error() -> None:
    db = _linescan.Database()
    with pytest.raises(_linescan.error, match="expression 1"):
        db.compile(expressions=[b"ok", b"a("], ids=[0, 1], elements=2, flags=[0, 0])
    with pytest.raises(ValueError):
        db.compile(expressions=[b"a\x00b"], ids=[0], elements=1, flags=[0])  # Hyperscan reads a C string
    with pytest.raises(_linescan.error):
        _linescan.Scratch(db)  # nothing compiled
    with pytest.raises(_linescan.error):
        _linescan.loadb(b"\x00not a database\xff" * 20, _linescan.HS_MODE_BLOCK)
    db.compile(expressions=[b"x"], ids=[0], elements=1, flags=[0])
    lines = db.lines(memoryview(b"x\ny\nx"), _linescan.Scratch(db))
    assert lines.candidates() == {0: {0}, 4: {0}}
    with pytest.raises(ValueError):
        lines.spans({}, lambda *a: a, [(99, {0})])  # beyond the data
    with pytest.raises(TypeError):
        lines.spans([], lambda *a: a)  # the memo must be a dict
    again = _linescan.loadb(_linescan.dumpb(db), _linescan.HS_MODE_BLOCK)
    assert again.lines(b"x\ny\nx", _linescan.Scratch(again)).candidates() == {0: {0}, 4: {0}}


def test_catalog_spans_through_libhs_equal_python_hyperscans(tmp_path: Path) -> None:
    """The whole catalog on generated multi-rank logs, in 64 KB buffers with one memo per file: libhs's spans
    and python-hyperscan's (the Python loop) hold the same lines with the same matches."""
    require("hyperscan")
    from simulate.training_logs import generate

    generate(tmp_path, ranks=8, size=600_000, seed=5, failure="cuda_oom")
    fast, python = build_matcher(default_catalog(), "libhs"), build_matcher(default_catalog(), "hyperscan")
    assert fast.engine.name == "libhs" and python.engine.name == "hyperscan"
    compared = 0
    for path in sorted(tmp_path.rglob("*.log")):
        data = path.read_bytes()
        memos: tuple[dict[Any, Any], dict[Any, Any]] = ({}, {})
        for at in range(0, len(data), 1 << 16):
            buffer = data[at : at + (1 << 16)]
            got = [[(s, e, lm.text, lm.signature and lm.signature.id, lm.fields, lm.context)
                    for s, e, lm in m.spans(buffer, memo)] for m, memo in zip((fast, python), memos, strict=True)]
            assert got[0] == got[1], path
            compared += len(got[0])
    assert compared > 300


def test_without_the_extension_auto_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "catalog._linescan", None)  # import now raises ImportError
    with pytest.raises(ImportError):
        make_engine(_patterns(), "libhs")
    assert make_engine(_patterns(), "auto").name in ("hyperscan", "re")
    assert isinstance(make_engine(_patterns(), "re"), ReEngine)


@pytest.mark.parametrize("volatile", [
    Volatile(after=("NCCL INFO Ring ", "NCCL INFO Channel "), before=" : "),
    Volatile(after=("ab", "a"), before=" :"),  # one `after` begins another: the first that fits wins
    Volatile(after=("x",), before="x"),
])
def test_the_c_loop_makes_the_sibling_keys_python_makes(volatile: Volatile) -> None:
    rng = random.Random(11)
    junk = ["NCCL INFO ", "Ring ", "a", "x", "12", "3", "/", " : ", " ", "\xff", "\x00"]
    digits = ["12", "3", "07/4", "1/", "/4", "", "5x"]
    keyed = 0
    for _ in range(3000):
        pieces = [rng.choice(junk) for _ in range(rng.randrange(4))]
        for _ in range(rng.randrange(3)):  # near misses and hits, maybe twice in a line
            near = rng.choice([volatile.before, volatile.before[:-1], "x" + volatile.before])
            pieces += [rng.choice(volatile.after), rng.choice(digits), near, *rng.sample(junk, 2)]
        raw = "".join(pieces).encode("latin-1")
        key = sibling_key(7, volatile, raw)
        assert _linescan.sibling_key(7, raw, volatile.literals) == key, raw
        keyed += key != raw
    assert keyed > 300


def test_volatile_literals_must_leave_one_way_to_read_a_line() -> None:
    for before in ("1 :", "/x", ""):
        with pytest.raises(ValueError):
            Volatile(after=("Ring ",), before=before)
    with pytest.raises(ValueError):
        Volatile(after=(), before=" : ")


def test_match_through_libhs_gives_each_line_what_the_python_loop_gives() -> None:
    """Matcher.match builds each line's own LineMatch in C: the same offsets, texts (siblings', CRLF lines',
    truncated lines', invalid UTF-8) and matches as python-hyperscan's Python loop, with and without a memo."""
    require("hyperscan")
    from tests.unit.test_siblings import _log

    rng = random.Random(19)
    data = _log(rng, 3000)
    lines = data.split(b"\n")
    for k in rng.sample(range(len(lines)), 300):  # CRLF endings, and lines past MAX_LINE_CHARS
        lines[k] += rng.choice([b"\r", b"\r\r", b" " + b"\xe2\x82" * 5000 + b"\r"])
    data = b"\n".join(lines)
    fast, python = build_matcher(default_catalog(), "libhs"), build_matcher(default_catalog(), "hyperscan")
    for at in (0, 1):  # one memo across two buffers, then none
        memos: tuple[dict[Any, Any], dict[Any, Any]] = ({}, {})
        halves = (data[: len(data) // 2], data[len(data) // 2 :])
        for buffer in halves:
            got = [m.match(buffer, memo if at == 0 else None) for m, memo in zip((fast, python), memos, strict=True)]
            assert got[0] == got[1]
            assert any(lm.text.endswith("…[truncated]") for lm in got[0])


def test_the_vectorised_newline_count_is_bytes_count() -> None:
    from catalog.lines import newline_counter, python_count
    from catalog.native import linescan, switched

    assert newline_counter(linescan()) is _linescan.count_newlines  # the scanner's, where it is switched on
    with switched(False):
        assert newline_counter(linescan()) is python_count
    rng = random.Random(23)
    # byte-wide lanes are summed every 4,080 bytes: long runs of newlines would wrap them if they were not
    long = bytes(rng.choice(b"\n\nx") for _ in range(100_003))
    for buffer in [*_random_buffers(seed=29, count=300), b"\n" * 5000 + b"x" * 77, long, b"\n" * 70_001]:
        n = len(buffer)
        for start, end in [(0, n), (rng.randrange(n + 2), rng.randrange(n + 2)), (-rng.randrange(1, n + 9), n + 5),
                           (rng.randrange(n + 1), -rng.randrange(1, n + 9))]:
            assert _linescan.count_newlines(buffer, start, end) == buffer.count(b"\n", start, end), (start, end)
        assert _linescan.count_newlines(buffer) == buffer.count(b"\n")


@pytest.mark.parametrize("args", [
    ({}, lambda *a: None, "not a list"),  # extra lines
    ({}, lambda *a: None, [(0, 5)]),  # ids that are no collection
    ({}, lambda *a: None, None, {0: "not literals"}),
    ({}, lambda *a: None, None, {0: ((b"",), b" : ")}),  # an empty literal
    ({}, lambda *a: None, None, None, 10, ("not a type", frozenset(), 10, "x")),
    ({}, lambda *a: ("not", "a", "LineMatch"), None, None, 10, (tuple, frozenset(), 10, "x")),
    ({}, 42),  # a callback that cannot be called
])
def test_wrong_arguments_raise_rather_than_crash(args: tuple[Any, ...]) -> None:
    """Whatever a caller passes, the C loop raises a Python exception; it never reads memory it does not own."""
    db = _linescan.Database()
    db.compile(expressions=[b"x"], ids=[0], elements=1, flags=[_linescan.HS_FLAG_MULTILINE])
    lines = db.lines(b"a x\nx\n", _linescan.Scratch(db))
    with pytest.raises((TypeError, ValueError)):
        lines.spans(*args)
