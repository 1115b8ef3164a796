"""How a candidate line is confirmed costs less and decides the same (issue 23: the scan's cost per rank file).

- A pattern Hyperscan scans for exactly, without named groups, is not searched again with `re` on a line that is
  the bytes Hyperscan scanned (ASCII, no CR: Engine.vouches). Checked: on every line below, a vouched candidate is
  one `re` confirms, and each LineMatch, in C and in Python, is the one a search of every candidate gives.
- `re` confirms a pattern with its optional groups written as choices (rewrite.branch_optionals): the same span
  and groups on every line below, for every pattern that has one.

Lines: every catalog example (positive and negative), the bundled examples, a generated job's logs, and their
upper-case and non-ASCII variants.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from catalog import native
from catalog.matcher import MAX_LINE_CHARS, LineMatch, Matcher, _kept_text
from catalog.native import switched
from catalog.rewrite import branch_optionals, confirm_regex, line_confined
from scan.engine import default_matcher
from simulate.training_logs import generate

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    tmp = tmp_path_factory.mktemp("confirm")
    matcher = default_matcher()
    generate(tmp, ranks=8, size=300_000, seed=4, failure="oom_kill", survivors="all", quiet=True)
    found = [text for sig in matcher.catalog.signatures for text in (*sig.examples.positive, *sig.examples.negative)]
    for path in sorted([*(tmp / "logs").rglob("*.log"), *(ROOT / "examples").rglob("*.log")]):
        found += path.read_text(errors="replace").splitlines()
    rng = random.Random(7)
    picked = rng.sample(found, min(len(found), 4000))
    return picked + [line.upper() for line in rng.sample(picked, 300)] + \
        [line.replace("e", "é") for line in rng.sample(picked, 200)]


def _as_found(m: re.Match[str] | None) -> object:
    return None if m is None else (m.span(), m.groupdict())


def test_an_optional_group_written_as_a_choice_finds_the_same_span_and_groups(lines: list[str]) -> None:
    matcher = default_matcher()
    changed = [p for p in matcher.patterns if branch_optionals(p) != p]
    assert len(changed) > 50  # the catalog has many: the check below is not vacuous
    for pattern in changed:
        before, after = re.compile(pattern, re.ASCII), confirm_regex(pattern)
        for line in lines:
            assert _as_found(after.search(line)) == _as_found(before.search(line)), (pattern, line)


@pytest.mark.parametrize(("pattern", "text"), [
    (r"(a+)?ab", "aaab"),  # backtracking into the optional: group "aa", as the repeat gives
    (r"(a)?(?(1)b|c)", "c"),  # a conditional on a skipped optional group
    (r"(?:x(?P<n>\d+))??(?P<m>\d)", "x12"),  # lazy: skipped first
    (r"((a)?b)?c", "bc"),  # nested
    (r"[(]?(x)?\)?", "(x)"),  # parentheses in a class and escaped are not groups
])
def test_branch_optionals_on_sre_corner_cases(pattern: str, text: str) -> None:
    assert _as_found(confirm_regex(pattern).search(text)) == _as_found(re.compile(pattern, re.ASCII).search(text))


def test_line_confined_leaves_out_what_could_read_past_the_line() -> None:
    assert line_confined(r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=\d+")
    assert line_confined(r"(?i)\b(?:error|fatal)\b")
    assert line_confined(r"[^]a]b") and line_confined(r"[a\]]x")  # a ] first, or escaped, leaves no class
    for pattern in (r"foo\n", r"a(?=b)", r"(?<!x)a", r"(a)\1", r"(?s)a.b", r"a\Z", r"a\vb", r"\x0a", "é", "a\nb",
                    r"[\W]x", r"[a^](?=x)", r"[]a](?=x)"):
        assert not line_confined(pattern), pattern


def test_what_the_engine_vouches_for_re_confirms(lines: list[str]) -> None:
    matcher = default_matcher()
    vouched = {i for i in range(matcher.pattern_count) if (matcher._confirms[i] or matcher._confirmer(i))[5]}
    assert len(vouched) > 100
    seen = 0
    for line in lines:
        if not line.isascii() or "\r" in line:
            continue
        for index in matcher.engine.candidates((line + "\n").encode()).get(0, set()) & vouched:
            assert matcher._regex(index).search(line.lower() if matcher._folded[index] else line), (index, line)
            seen += 1
    assert seen > 200


def _loops(matcher: Matcher) -> list[object]:
    loops: list[object] = [matcher.match_line]
    linescan = native.built()
    if linescan is not None:
        with switched(True):
            native.linescan()  # set up: handed its types, as a scanner made now would be

        def c_loop(text: str, indexes: tuple[int, ...], start: int, end: int) -> LineMatch | None:
            found: LineMatch | None = linescan.match_line(
                text, indexes, matcher._confirms, matcher._confirmer, matcher._caseless_search, start, end,
                LineMatch, MAX_LINE_CHARS, _kept_text)
            return found
        loops.append(c_loop)
    return loops


def test_a_vouched_line_matches_as_a_searched_one_in_both_loops(lines: list[str]) -> None:
    matcher = default_matcher()
    vouched = 0
    for loop in _loops(matcher):
        for line in lines:
            hits = tuple(sorted(matcher.engine.candidates((line + "\n").encode()).get(0, ())))
            own = loop(line, hits, 0, len(line))  # type: ignore[operator]  # the line's own bytes: vouched
            searched = loop(line, hits, 1, 1)  # type: ignore[operator]  # a span that is not the line's: searched
            assert (own is None) == (searched is None), line
            if own is not None:
                assert own[2:] == searched[2:] and own.signature is searched.signature, line
                vouched += line.isascii()
    assert vouched > 500


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    """Atoms, and groups (capturing, named, bare) quantified every way, nested three deep: where sre's repeats
    and choices could part (captures kept across iterations, backtracking into an optional)."""
    out = ""
    for _ in range(rng.randint(1, 3)):
        if depth < 3 and rng.random() < 0.35:
            inner = _random_pattern(rng, depth + 1)
            if rng.random() < 0.3:
                inner += "|" + _random_pattern(rng, depth + 1)
            opening = rng.choice(["(", "(?:", f"(?P<g{rng.randrange(10**9)}>"])
            out += opening + inner + ")" + rng.choice(["?", "?", "??", "*", "+", ""])
        else:
            out += rng.choice(["a", "b", "ab", "a*", "b+", "[ab]", ".", r"\d", "a?"])
    return out


def test_optionals_as_choices_on_random_patterns() -> None:
    rng = random.Random(11)
    compared = 0
    for _ in range(1500):
        pattern = _random_pattern(rng)
        try:
            before = re.compile(pattern, re.ASCII)
        except re.error:  # a group name drawn twice
            continue
        after = confirm_regex(pattern)
        for _ in range(8):
            text = "".join(rng.choice("ab1x") for _ in range(rng.randint(0, 8)))
            m, n = before.search(text), after.search(text)
            assert (m and (m.span(), m.groups())) == (n and (n.span(), n.groups())), (pattern, text)
            compared += 1
    assert compared > 10_000
