"""Which context kinds a source may fold is guarded by a diagnosis that counts repeats."""

from __future__ import annotations

import pytest

import correlator.reading
from correlator.diagnose import diagnose
from correlator.reading import SourceScanner
from correlator.speakers import who_from_path
from firstfault.engine import default_matcher
from schemas.diagnosis import Diagnosis

# No catalog entry knows these lines. rank1 repeats a mild error nobody else prints; rank2 prints one grave one.
# The differential view weighs every repeat, so rank1's ten outweigh rank2's one.
LOGS = {
    "rank1.log": "[rank1]: step 1 loss 2.0\n" + "[rank1]: error reading sample 17, skipped\n" * 10,
    "rank2.log": "[rank2]: step 1 loss 2.0\n[rank2]: fatal: aborting after bad shard\n",
}


def _diagnose() -> Diagnosis:
    matcher = default_matcher()
    results = []
    for name, text in LOGS.items():
        scanner = SourceScanner(matcher, name, who_from_path(name), 2026)
        scanner.feed(text.encode())
        results.append(scanner.finish())
    return diagnose(results, matcher.catalog)


def test_repeated_error_lines_are_all_weighed() -> None:
    found = _diagnose()
    assert found.root_cause is not None and found.root_cause.signature is None
    assert found.root_cause.rank == 1


def test_folding_error_lines_would_change_the_diagnosis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why `errorish` is not among FOLDED_KINDS: kept at its first and last occurrence only, the suspect flips."""
    assert "errorish" not in correlator.reading.FOLDED_KINDS
    monkeypatch.setattr(correlator.reading, "FOLDED_KINDS", correlator.reading.FOLDED_KINDS | {"errorish"})
    found = _diagnose()
    assert found.root_cause is not None and found.root_cause.rank == 2
