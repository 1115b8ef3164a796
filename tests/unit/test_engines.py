"""Hyperscan and the `re` fallback give identical findings; patterns never match across lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from catalog.engine import ReEngine, single_line
from catalog.loader import default_catalog
from firstfault.engine import build_matcher, scan_source
from ingest.files import chunks, expand

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus" / "real"
INPUTS = [ROOT / "examples"] + ([CORPUS] if CORPUS.is_dir() else [])


@pytest.mark.parametrize(
    ("pattern", "text", "line_matches"),
    [
        (r"foo\s+bar", "foo\nbar\nfoo  bar\n", [2]),
        (r"peer [^\s<]+ gone", "peer a\nb gone\npeer x gone\n", [2]),
        (r"a\Db", "a\nb\naxb\n", [2]),
    ],
)
def test_single_line_rewrite_never_crosses_a_newline(pattern: str, text: str, line_matches: list[int]) -> None:
    engine = ReEngine([pattern])
    buf = text.encode()
    starts = sorted(engine.candidates(buf))
    assert [buf.count(b"\n", 0, s) for s in starts] == line_matches
    # inside one line the rewrite matches exactly what the original does
    for line in text.splitlines():
        assert bool(re.search(pattern, line)) == bool(re.search(single_line(pattern), line))


def _findings(engine: str) -> list[tuple[str, str, int, str]]:
    matcher = build_matcher(default_catalog(), engine)
    out = []
    for root in INPUTS:
        for src in expand([str(root)]):
            res = scan_source(matcher, src.name, chunks(src, 1 << 16), 2026)
            out += [(f.source, f.signature, f.line_no, repr(f.fields)) for f in res.findings]
            out += [(c.source, c.kind, c.line_no, repr(c.fields)) for c in res.context]
    return out


def test_hyperscan_and_re_find_the_same_things() -> None:
    pytest.importorskip("hyperscan")
    hs = _findings("hyperscan")
    assert hs, "the inputs should produce findings"
    assert hs == _findings("re")


def test_patterns_sharing_a_prefix_are_all_reported() -> None:
    """A Hyperscan build dropped `[7] finished collective` when `[3] joined but didn't finish` was compiled too."""
    pytest.importorskip("hyperscan")
    from catalog.engine import HyperscanEngine

    patterns = [r"\[(?P<rank>\d+)\] finished collective #(?P<last_seq>\d+), but didn't join collective #(?P<seq>\d+)",
                r"\[(?P<rank>\d+)\] joined but didn't finish collective #(?P<seq>\d+)"]
    buf = b"x\n             [7] finished collective #182, but didn't join collective #183 (count from 1)\n"
    assert HyperscanEngine(patterns).candidates(buf) == {2: {0}}
