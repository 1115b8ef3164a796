"""The catalog fails loudly, naming file and entry; user catalogs extend and override."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalog.loader import build_catalog, load_catalog
from schemas.errors import CatalogError
from tests.catalog.helpers import catalog_files, one_entry

GOOD = one_entry(regex="thing broke: (?P<detail>\\w+)",
                 examples='positive: ["thing broke: badly"], negative: ["thing fine"]')


def test_a_valid_file_loads() -> None:
    cat = build_catalog(catalog_files(GOOD))
    assert cat.get("test.thing.broke") is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("severity: error", "severity: error\n    colour: red"), "colour"),
        (("'thing broke: (?P<detail>\\w+)'", "'thing broke: (?P<detail>\\w+'"), "bad regex"),
        (("id: test.thing.broke", "id: Test Thing"), "dotted"),
        (("role: initiating", "role: sometimes"), "role"),
        (("    fix: Mend the thing.\n", ""), "fix"),
    ],
)
def test_invalid_entries_fail_naming_file_and_entry(change: tuple[str, str], message: str) -> None:
    bad = GOOD.replace(*change)
    with pytest.raises(CatalogError) as err:
        build_catalog(catalog_files(bad, "broken.yaml"))
    assert "broken.yaml" in str(err.value)
    assert message in str(err.value)


def test_duplicate_ids_fail_naming_both_files() -> None:
    with pytest.raises(CatalogError, match=r"b\.yaml: test\.thing\.broke: duplicate id \(first defined in a\.yaml\)"):
        build_catalog(catalog_files(GOOD, "a.yaml") + catalog_files(GOOD, "b.yaml"))


def test_related_ids_must_exist() -> None:
    bad = GOOD.replace("severity: error", "severity: error\n    related: [no.such.entry]")
    with pytest.raises(CatalogError, match=r"no\.such\.entry"):
        build_catalog(catalog_files(bad))


def test_peer_blame_needs_a_peer_capture() -> None:
    bad = GOOD.replace("role: initiating", "role: collateral\n    implicates: peer")
    with pytest.raises(CatalogError, match="peer"):
        build_catalog(catalog_files(bad))


def test_user_catalog_overrides_a_bundled_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = load_catalog()
    some = bundled.signatures[0]
    override = GOOD.replace("test.thing.broke", some.id).replace("A thing broke", "Our own words")
    (tmp_path / "ours.yaml").write_text(override)
    merged = load_catalog(str(tmp_path))
    entry = merged.get(some.id)
    assert entry is not None and entry.title == "Our own words"
    assert len(merged) == len(bundled)


def test_missing_user_catalog_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="does not exist"):
        load_catalog(str(tmp_path / "nope"))


def test_a_prefilter_that_misses_a_positive_example_fails_to_load() -> None:
    """The engine only looks for a prefilter: one narrower than its regex would silently lose lines."""
    loose = GOOD.replace("{regex: 'thing broke: (?P<detail>\\w+)'}",
                         "{regex: 'thing broke: (?P<detail>\\w+)', prefilter: 'broke: \\w'}")
    assert build_catalog(catalog_files(loose)).get("test.thing.broke") is not None
    narrow = GOOD.replace("{regex: 'thing broke: (?P<detail>\\w+)'}",
                          "{regex: 'thing broke: (?P<detail>\\w+)', prefilter: 'broke: \\d'}")
    with pytest.raises(CatalogError, match=r"prefilter .* misses a positive example"):
        build_catalog(catalog_files(narrow))
