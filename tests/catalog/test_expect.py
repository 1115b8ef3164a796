"""The structured `expect` of a verification: validated at load (the catalog refuses to load, naming the file and
entry), every example output a test, and judging the way `firstfault verify` does."""

from __future__ import annotations

import pytest

from catalog.expect import Expectation, judge
from catalog.loader import build_catalog, default_catalog
from schemas.errors import CatalogError
from tests.catalog.helpers import THING, catalog_files, one_entry

ENTRY = one_entry(verification="thing --check | grep -c broke  # expect 0", more="    expect: EXPECT\n")
CATALOG = default_catalog()
WITH_EXPECT = [s for s in CATALOG.signatures if s.expect is not None]
PASSING = [(s.id, out) for s in WITH_EXPECT for out in s.expect.examples.passing]  # type: ignore[union-attr]
FAILING = [(s.id, out) for s in WITH_EXPECT for out in s.expect.examples.failing]  # type: ignore[union-attr]


def _load(expect: str) -> Expectation | None:
    cat = build_catalog(catalog_files(ENTRY.replace("EXPECT", expect), "mine.yaml"))
    sig = cat.get(THING)
    assert sig is not None
    return sig.expect


def _exit(expect: Expectation) -> int:
    return expect.exit_code if expect.exit_code is not None else 0


@pytest.mark.parametrize(("signature_id", "output"), PASSING)
def test_each_pass_example_passes(signature_id: str, output: str) -> None:
    expect = CATALOG.get(signature_id).expect  # type: ignore[union-attr]
    assert expect is not None and judge(expect, _exit(expect), output).passed


@pytest.mark.parametrize(("signature_id", "output"), FAILING)
def test_each_fail_example_fails(signature_id: str, output: str) -> None:
    expect = CATALOG.get(signature_id).expect  # type: ignore[union-attr]
    assert expect is not None and not judge(expect, _exit(expect), output).passed


def test_bundled_entries_with_expect_each_have_both_kinds_of_example() -> None:
    assert len(WITH_EXPECT) >= 5
    for sig in WITH_EXPECT:
        assert sig.expect and sig.expect.examples.passing and sig.expect.examples.failing, sig.id


@pytest.mark.parametrize(("expect", "complaint"), [
    ("{}", "at least one of exit_code"),
    ("{output_matches: '(unclosed'}", "bad regex"),
    ("{count: -1}", "greater than or equal to 0"),
    ("{exit_code: 256}", "less than or equal to 255"),
    ("{exit_status: 0}", "exit_status"),
    ("{count: 0, examples: {pass: ['3']}}", "pass example '3' fails: count 3, expected 0"),
    ("{output_lacks: 'Error', examples: {fail: ['all good']}}", "fail example 'all good' passes"),
    ("{count: 0, examples: {maybe: ['1']}}", "maybe"),
])
def test_a_bad_expect_fails_the_load_naming_file_entry_and_reason(expect: str, complaint: str) -> None:
    with pytest.raises(CatalogError) as err:
        _load(expect)
    assert "mine.yaml" in str(err.value) and "test.thing.broke" in str(err.value) and complaint in str(err.value)


def test_count_judges_the_last_number_and_ignores_the_exit_status_unless_asked() -> None:
    expect = _load("{count: 0}")
    assert expect is not None
    assert judge(expect, 1, "0\n").passed  # grep -c exits 1 when it counts nothing
    assert judge(expect, 0, "3\n").reason == "count 3, expected 0"
    assert judge(expect, 0, "no number here").reason == "output ends with no number, expected 0"
    strict = _load("{count: 0, exit_code: 0}")
    assert strict is not None and not judge(strict, 1, "0").passed


def test_every_field_given_must_hold() -> None:
    expect = _load("{exit_code: 0, output_matches: '^GPU \\d+:', output_lacks: 'mismatch'}")
    assert expect is not None
    assert judge(expect, 0, "GPU 0: H100\nGPU 1: H100").passed
    failed = judge(expect, 9, "GPU 0: H100\nversion mismatch")
    assert not failed.passed and "exit status 9, expected 0" in failed.reason and "'mismatch'" in failed.reason


def test_without_expect_exit_status_zero_passes_and_the_judgement_says_it_fell_back() -> None:
    assert _load("null") is None
    assert judge(None, 0, "whatever").passed and judge(None, 0, "").fallback
    failed = judge(None, 2, "")
    assert not failed.passed and "no structured `expect`" in failed.criterion
