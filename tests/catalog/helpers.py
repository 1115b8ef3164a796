"""Shared by the catalog tests (and tests/unit/test_loader.py): a catalog file of one valid entry, which the
loader loads and the published schema accepts; each test varies it, by argument or by replacing a line."""

from __future__ import annotations

from pathlib import Path

THING = "test.thing.broke"


def one_entry(sig_id: str = THING, regex: str = "thing broke", verification: str = "thing --check  # expect ok",
              examples: str = 'positive: ["thing broke"]', more: str = "") -> str:
    """``more``: lines of the entry's own (indented four spaces, newline-ended), before its examples."""
    return f"""
version: 1
signatures:
  - id: {sig_id}
    title: A thing broke
    category: other
    severity: error
    role: initiating
    fingerprints: [{{regex: '{regex}'}}]
    meaning: The thing broke in a way we understand.
    fix: Mend the thing.
    verification: "{verification}"
{more}    examples: {{{examples}}}
"""


def catalog_files(text: str, name: str = "x.yaml") -> list[tuple[Path, str]]:
    """``text`` as the one file build_catalog reads, named ``name`` (what its errors say)."""
    return [(Path(name), text)]
