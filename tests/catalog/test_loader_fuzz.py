"""Property tests of the catalog loader on a user's catalog directory (FIRSTFAULT_CATALOG_PATH): whatever the
files hold (bytes that are not UTF-8, broken YAML, YAML of the wrong shape, entries with wrong types, bad or
hostile regexes), loading gives a catalog or a CatalogError naming the file, never another exception.

The fuzzed call is the loader's own for user files (env_sources, build_catalog) without the bundled catalog:
parsing 317 bundled entries would cost 0.4 s an input. The full path (load_catalog, the CLI) is run on the cases
found, below.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.loader import build_catalog, env_sources, load_catalog
from schemas.errors import CatalogError

# 300 in CI: the atheris target catalog_file (tests/fuzz) runs 10,000 mutated files; `make fuzz` runs 10,000 here
EXAMPLES = int(os.environ.get("FF_FUZZ_CATALOG", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ROOT = Path(__file__).resolve().parents[2]

ENTRY: dict[str, Any] = {
    "id": "site.custom_failure", "title": "Our launcher's own failure line", "category": "launch",
    "tags": ["site"], "severity": "critical", "role": "initiating",
    "fingerprints": [{"regex": r"SITE-FAIL code=(?P<detail>\d+)"}],
    "meaning": "The site launcher gave up.", "fix": "Restart the launcher.", "verification": "site-check --all",
    "examples": {"positive": ["SITE-FAIL code=7"], "negative": ["SITE-OK"]},
}
VALID = yaml.safe_dump({"version": 1, "signatures": [ENTRY]}, sort_keys=False)

# regexes Python's re refuses, or that push it (nesting, sizes, names), or that a catalog must not accept
REGEXES = st.sampled_from([
    "(", ")", "[", "[z-a]", "a{2,1}", "\\", "(?P<detail>a)(?P<detail>b)", "(?P<1x>a)", "(?<=a+)b", "*a", "a**",
    "(" * 300 + "a" + ")" * 300, "(?:" * 2000 + "a" + ")" * 2000, "a{99999999999}", "a{4294967296}",
    "\\p{L}", "(?P<device>x)", "(?P<rank>\\d+)", "", ".*", "(a+)+$", "\x00", "[\\d-z]", "(?i)(?m)x", "\\N{DUMMY}",
    "(?P<detail>" + "x" * 100_000 + ")",
])
scalar = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=True),
                   st.text(max_size=30), REGEXES)
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=10) | st.sampled_from(sorted(ENTRY)), inner, max_size=3), max_leaves=8)


@st.composite
def mutated_entry(draw: st.DrawFn) -> dict[str, Any]:
    """The valid entry with a few fields replaced, dropped or added: mostly still the right shape."""
    entry = {**ENTRY, "fingerprints": [dict(fp) for fp in ENTRY["fingerprints"]]}
    for _ in range(draw(st.integers(1, 3))):
        field = draw(st.sampled_from([*sorted(ENTRY), "regex", "prefilter", "related", "implicates", "extra"]))
        fps = entry.get("fingerprints")
        if field in ("regex", "prefilter") and isinstance(fps, list) and fps and isinstance(fps[0], dict):
            fps[0][field] = draw(REGEXES | st.text(max_size=20))
        elif field in ("regex", "prefilter"):
            continue
        elif draw(st.booleans()) and field in entry:
            del entry[field]
        else:
            entry[field] = draw(value)
    return entry


documents = st.one_of(
    st.builds(lambda v, e: {"version": v, "signatures": e}, st.just(1) | value,
              st.lists(mutated_entry(), min_size=1, max_size=3) | value),
    value,
)


def _dump(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc, allow_unicode=True)
    except yaml.YAMLError:  # a value PyYAML itself cannot write: write its repr, broken YAML of another kind
        return repr(doc)


@st.composite
def edited_text(draw: st.DrawFn) -> str:
    """The valid file with a few characters deleted, inserted or replaced: YAML broken in the ways typing does."""
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 8))
        text = text[:at] + draw(st.text(max_size=4) | st.sampled_from(["\t", ":", "- ", "'", '"', "&a ", "*a",
                                                                        "!!python/object:os.system ", "{", "\n  "]))\
            + text[at + cut:]
    return text


file_bytes = st.one_of(
    documents.map(_dump).map(str.encode),
    edited_text().map(str.encode),
    st.binary(max_size=200),  # not UTF-8, NULs, a BOM...
    st.builds(lambda t, b: t.encode() + b, edited_text(), st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xef\xbb"])),
)


def load_user(directory: Path) -> int:
    """What load_catalog does with FIRSTFAULT_CATALOG_PATH's files, minus the bundled catalog."""
    return len(build_catalog((), env_sources(str(directory))))


def _check(directory: Path, data: bytes) -> None:
    (directory / "site.yaml").write_bytes(data)
    try:
        load_user(directory)
    except CatalogError as exc:
        assert str(exc).startswith(str(directory / "site.yaml")), str(exc)


@FUZZ
@given(data=file_bytes)
def test_a_user_catalog_file_loads_or_is_a_catalog_error_naming_it(tmp_path: Path, data: bytes) -> None:
    _check(tmp_path, data)


# What the fuzzer found, kept as explicit cases: each raised another exception type before the fix.
FOUND = [
    pytest.param(b"version: 1\nsignatures: []\n# caf\xe9 in Latin-1\n", "cannot read it", id="not-utf8"),
    pytest.param(VALID.replace(r"SITE-FAIL code=(?P<detail>\d+)", "a{4294967296}").encode(),
                 "OverflowError", id="repeat-over-2**32"),
    pytest.param(VALID.replace(r"SITE-FAIL code=(?P<detail>\d+)", "(" * 1200 + "a" + ")" * 1200).encode(),
                 "RecursionError", id="groups-nested-1200-deep"),
    pytest.param(b"version: 1\nsignatures: " + b"[" * 5000 + b"]" * 5000 + b"\n", "not valid YAML",
                 id="yaml-nested-5000-deep"),  # libyaml's own limit (1,000); the pure-Python loader would recurse
]


@pytest.mark.parametrize(("data", "reason"), FOUND)
def test_each_found_case_is_a_catalog_error_with_its_reason(tmp_path: Path, data: bytes, reason: str) -> None:
    (tmp_path / "site.yaml").write_bytes(data)
    with pytest.raises(CatalogError, match=reason) as caught:
        load_catalog(str(tmp_path))  # the whole path: the bundled catalog, then the user's
    assert str(caught.value).startswith(str(tmp_path / "site.yaml"))


def test_a_directory_named_like_a_catalog_file_is_a_catalog_error(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").mkdir()
    with pytest.raises(CatalogError, match="cannot read it"):
        load_user(tmp_path)


def test_the_cli_reports_a_broken_user_catalog_in_one_line_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_bytes(FOUND[0].values[0])  # type: ignore[index]
    env = {**os.environ, "FIRSTFAULT_CATALOG_PATH": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "firstfault.cli", "catalog", "list"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("firstfault: catalog error: ") and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "cannot read it" in done.stderr
