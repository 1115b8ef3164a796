"""Every example line in the catalog is a test: positives match their entry, negatives do not."""

from __future__ import annotations

import re

import pytest

from catalog.loader import default_catalog
from catalog.model import Signature

CATALOG = default_catalog()
POSITIVE = [(s.id, line) for s in CATALOG.signatures for line in s.examples.positive]
NEGATIVE = [(s.id, line) for s in CATALOG.signatures for line in s.examples.negative]


def _matches(sig: Signature, line: str) -> bool:
    return any(re.search(fp.regex, line) for fp in sig.fingerprints)


@pytest.mark.parametrize(("signature_id", "line"), POSITIVE)
def test_positive_example_matches_its_entry(signature_id: str, line: str) -> None:
    sig = CATALOG.get(signature_id)
    assert sig is not None
    assert _matches(sig, line), f"{signature_id} does not match its own positive example"


@pytest.mark.parametrize(("signature_id", "line"), NEGATIVE)
def test_negative_example_does_not_match_its_entry(signature_id: str, line: str) -> None:
    sig = CATALOG.get(signature_id)
    assert sig is not None
    assert not _matches(sig, line), f"{signature_id} matches its own negative example"
