"""The matcher's C loop (catalog._linescan.match_line) gives the LineMatch the Python one (Matcher.match_line) gives,
on every kind of line: catalog examples, generated job logs, the bundled examples, lines beyond ASCII (where a
case-insensitive pattern is searched in its own form) and lines past the kept length."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from catalog import native
from catalog.matcher import MAX_LINE_CHARS, LineMatch, Matcher, _kept_text, _match_line_now
from catalog.native import switched
from scan.engine import default_matcher
from simulate.training_logs import generate

ROOT = Path(__file__).resolve().parents[2]


def _native() -> Any:
    linescan = pytest.importorskip("catalog._linescan", reason="the C line loop is built only where libhs is installed")
    with switched(True):
        native.linescan()  # set up: handed its types, as a scanner made now would be
    return linescan.match_line


def _lines(tmp: Path, matcher: Matcher) -> list[str]:
    generate(tmp, ranks=8, size=400_000, seed=3, failure="cuda_oom", quiet=True)
    lines = [text for sig in matcher.catalog.signatures for text in (*sig.examples.positive, *sig.examples.negative)]
    for path in sorted([*(tmp / "logs").rglob("*.log"), *(ROOT / "examples").rglob("*.log")]):
        lines += path.read_text(errors="replace").splitlines()
    rng = random.Random(5)
    picked = rng.sample(lines, min(len(lines), 3000))
    odd = [line.replace("e", "é").replace("o", "ö") for line in rng.sample(picked, 300)]  # not ASCII
    odd += [line.upper() for line in rng.sample(picked, 100)]  # case-insensitive patterns on upper case
    odd += [line * (MAX_LINE_CHARS // max(1, len(line)) + 2) for line in rng.sample(picked, 20)]  # cut when kept
    return picked + odd


def _same(a: LineMatch | None, b: LineMatch | None) -> None:
    assert a == b
    if a is not None and b is not None:
        assert type(a) is type(b) is LineMatch and a.signature is b.signature
        assert [type(v) for v in a.fields.values()] == [type(v) for v in b.fields.values()]
        assert {k: [type(v) for v in f.values()] for k, f in a.context.items()} == \
            {k: [type(v) for v in f.values()] for k, f in b.context.items()}


def test_the_c_loop_gives_the_python_loops_matches(tmp_path: Path) -> None:
    native = _native()
    matcher = default_matcher()
    every = tuple(range(matcher.pattern_count))
    found = 0
    for i, text in enumerate(_lines(tmp_path, matcher)):
        hits = matcher.engine.candidates((text + "\n").encode()).get(0, ())
        for indexes in (tuple(sorted(hits)), every):
            want = matcher.match_line(text, indexes, i, i + 1)
            got = native(text, indexes, matcher._confirms, matcher._confirmer, matcher._caseless_search, i, i + 1,
                         LineMatch, MAX_LINE_CHARS, _kept_text)
            _same(got, want)
            found += want is not None
    assert found > 1000
    # indexes as any collection, in any order: sorted first, as the Python loop sorts them
    text = "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    shuffled = list(every)
    random.Random(1).shuffle(shuffled)
    _same(native(text, shuffled, matcher._confirms, matcher._confirmer, matcher._caseless_search, 0, 1, LineMatch,
                 MAX_LINE_CHARS, _kept_text), matcher.match_line(text, set(shuffled), 0, 1))


def test_the_scanner_uses_the_c_loop_where_it_is_switched_on() -> None:
    assert _match_line_now() is _native()
    with switched(False):
        assert _match_line_now() is None
