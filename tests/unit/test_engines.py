"""Hyperscan and the `re` fallback give identical findings; patterns never match across lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from catalog.engine import ReEngine
from catalog.literals import LineFilteredRe, required_literal
from catalog.loader import default_catalog
from catalog.matcher import folded
from catalog.rewrite import existence_form, line_regex, single_line
from scan.engine import build_matcher, scan_source
from sources.files import chunks, expand
from tests.unit.hs_engines import HS_ENGINES, require

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


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Generated logs: the benchmark's (NCCL INFO noise, step lines, torchrun tables) and simulated failures."""
    from simulate import Knobs, generate
    from simulate.training_logs import generate as generate_bench

    base = tmp_path_factory.mktemp("generated")
    generate_bench(base / "bench", ranks=8, size=1_000_000, seed=4, failure="cuda_oom")
    for kind in ("xid79", "nic_failure", "store_master_death"):
        generate(kind, base / kind, seed=1, knobs=Knobs(world_size=16, steps=4))
    return [base]


def _findings(engine: str, roots: list[Path]) -> list[tuple[str, str, int, str]]:
    matcher = build_matcher(default_catalog(), engine)
    out = []
    for root in INPUTS + roots:
        for src in expand([str(root)]):
            res = scan_source(matcher, src.name, chunks(src, 1 << 16), 2026)
            out += [(f.source, f.signature, f.line_no, repr(f.fields)) for f in res.findings]
            out += [(c.source, c.kind, c.line_no, repr(c.fields)) for c in res.context]
    return out


@pytest.mark.parametrize("engine", HS_ENGINES)
def test_hyperscan_and_re_find_the_same_things(generated: list[Path], engine: str) -> None:
    """Hyperscan scans for some patterns' looser prefilters, `re` for the patterns: the findings are the same,
    through python-hyperscan and through libhs's C line loop."""
    require(engine)
    hs = _findings(engine, generated)
    assert hs, "the inputs should produce findings"
    assert {kind for _, kind, _, _ in hs} >= {"table_rank", "table_exit", "nccl_ring", "errorish"}
    assert hs == _findings("re", generated)


@pytest.mark.parametrize("engine", HS_ENGINES)
def test_matches_hyperscan_drops_are_rescued_by_the_self_check(engine: str) -> None:
    """Hyperscan dropped `[7] finished collective` when `[3] joined but didn't finish` was compiled with it;
    the matcher's self-check on the catalog examples scans such patterns with `re` as well."""
    require(engine)
    matcher = build_matcher(default_catalog(), engine)
    buf = b"x\n             [7] finished collective #182, but didn't join collective #183 (count from 1)\n"
    [hit] = matcher.match(buf)
    assert hit.signature is not None and hit.signature.id == "pytorch.c10d.desync_not_joined"
    assert hit.fields == {"rank": 7, "last_seq": 182, "seq": 183}


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (rb"\[(?P<rank>\d+)\] joined but didn't finish #", b"] joined but didn't finish #"),
        (rb"abc?defg", b"defg"),  # c is optional
        (rb"x(?:abcdef)?yz+w", None),  # the group is optional and z repeats: no fixed run of 4
        (rb"[abc]+literal\.x\d+", b"literal.x"),
        (rb"ab{2,3}cdef", b"cdef"),
        (rb"(?i)case does not matter", None),
        (rb"either this|or that one", None),
        (rb"^Node:[ \t]+(?P<host>[\w.-]+)$", b"Node:"),
    ],
)
def test_required_literal_is_a_run_every_match_contains(pattern: bytes, literal: bytes | None) -> None:
    assert required_literal(pattern) == literal


def _buffers() -> list[bytes]:
    bufs = [p.read_bytes() for root in INPUTS for p in sorted(root.rglob("*.log"))]
    examples = [ex for sig in default_catalog().signatures for ex in sig.examples.positive]
    return [*bufs, "".join(f"x\n{line}\n" for line in examples).encode()]


def test_the_literal_prefilter_finds_the_lines_a_full_re_pass_finds() -> None:
    """Every catalog and context pattern scanned through its literal prefilter reports exactly the lines that a
    full-buffer `re` pass reports (the patterns Hyperscan drops are scanned this way)."""
    matcher = build_matcher(default_catalog(), "re")
    reference = ReEngine(matcher.patterns)
    bufs = _buffers()
    expected = [reference.candidates(buf) for buf in bufs]
    filtered = 0
    for index, pattern in enumerate(matcher.patterns):
        scan = LineFilteredRe(index, line_regex(pattern))
        filtered += scan.literal is not None
        for buf, found in zip(bufs, expected, strict=True):
            assert scan.line_starts(buf) == sorted(s for s, ids in found.items() if index in ids), pattern
    assert filtered > len(matcher.patterns) // 2  # most patterns have a literal: the test exercises the filter


def test_folded_patterns_match_exactly_the_lines_their_caseless_originals_match() -> None:
    """A caseless pattern run case-sensitively on the lowercased line (faster in `re`) decides every line the
    same way, whatever the case of the line; patterns it cannot be done for are left alone."""
    assert folded(r"(?i)\b(?:error|fatal)\b") == r"\b(?:error|fatal)\b"
    for unsafe in (r"(?i)Error", r"(?i)(?P<what>error)", r"(?i)a\x41", r"(?i)x(?-i:y)", "error"):
        assert folded(unsafe) is None, unsafe
    matcher = build_matcher(default_catalog(), "re")
    eligible = [p for p in matcher.patterns if folded(p)]
    assert any("error|fatal" in p for p in eligible)  # errorish, the context pattern most lines match
    lines = [line.decode("ascii", "replace") for buf in _buffers() for line in buf.splitlines()]
    for pattern in eligible:
        caseless, lowered = re.compile(pattern, re.ASCII), re.compile(folded(pattern) or "", re.ASCII)
        for line in lines:
            for variant in (line, line.upper(), line.swapcase()):
                assert bool(caseless.search(variant)) == bool(lowered.search(variant.lower())), (pattern, variant)


def test_literal_length_reads_escapes_as_literals() -> None:
    from catalog.matcher import literal_length

    assert literal_length(r"\[deepspeed\] OVERFLOW!") == len("[deepspeed] OVERFLOW!")
    assert literal_length(r"a\.b") == 3
    assert literal_length(r"[xyz]+foo") == 3
    assert literal_length(r"(?P<rank>\d+) x?yz") == 3  # ' ' 'y' 'z': captures, classes, optionals don't count


def test_literal_length_of_an_escaped_log_line_is_linear() -> None:
    # re.escape of a real line used to send the class alternative into exponential backtracking
    from catalog.matcher import literal_length

    line = "[x] " + "a." * 200
    assert literal_length(re.escape(line)) == len(line)


@pytest.mark.parametrize(
    ("pattern", "scanned_for"),
    [
        (r"exception: (?:[^\n]+)", r"exception: (?:[^\n])"),  # the watchdog line: 200 ends became one
        (r"Using (?:[^\n]{1,400})", r"Using (?:[^\n]{1})"),
        (r"foo(?:bar|baz+)", r"foo(?:bar|baz)"),
        (r"id \d*", r"id "),
        (r"a.*?", r"a"),
        (r"a\+", r"a\+"),  # an escaped plus is a character, not a repeat
        (r"a\\+", r"a\\"),  # an escaped backslash, repeated
        (r"\x41*", r"\x41*"),  # not a repeat of "1"
        (r"\d+$", r"\d+$"),  # anchored: the repeat decides where the match may end
        (r"(?:ab)*", r"(?:ab)*"),
        (r"\d*", r"\d*"),  # never down to a pattern that matches everywhere
    ],
)
def test_the_engine_scans_for_a_pattern_without_what_only_lengthens_its_end(pattern: str,
                                                                            scanned_for: str) -> None:
    assert existence_form(pattern) == scanned_for


def test_every_pattern_so_shortened_matches_exactly_the_lines_it_did(generated: list[Path]) -> None:
    """Hyperscan scans for the shortened forms, `re` confirms with the whole pattern: a line one holds a match of
    and the other does not would be a finding lost (or a wasted confirmation). Checked on every example line,
    the corpus, and generated logs."""
    matcher = build_matcher(default_catalog(), "re")
    lines = [ex for sig in default_catalog().signatures for ex in (*sig.examples.positive, *sig.examples.negative)]
    for root in INPUTS + generated:
        for src in expand([str(root)]):
            lines += [line.decode("utf-8", "replace") for block in chunks(src, 1 << 20)
                      for line in block.splitlines()]
    shortened = 0
    for pattern in matcher.patterns:
        whole = single_line(pattern)
        short = existence_form(whole)
        if short == whole:
            continue
        shortened += 1
        a, b = re.compile(whole, re.ASCII), re.compile(short, re.ASCII)
        for line in lines:
            assert bool(a.search(line)) == bool(b.search(line)), (pattern, short, line)
    assert shortened > 50  # most fingerprints end in a capture of the rest of the line or a number
