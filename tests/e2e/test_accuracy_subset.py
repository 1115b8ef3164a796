"""A fixed subset of the accuracy sweep (bench/accuracy.py) as a regression test: three seeds per scenario kind,
each under minutes of clock skew, with lost and truncated shards, one interleaved file, dumps and job metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_sources
from schemas.diagnosis import Diagnosis
from simulate import SCENARIOS, Knobs, Truth, generate
from sources.files import expand

VARIANTS = {
    0: (Knobs(world_size=32, max_skew_s=300.0, missing=0.1, truncated=0.1), True),
    1: (Knobs(world_size=64, max_skew_s=120.0, interleaved=True, desync_debug=True), False),
    2: (Knobs(world_size=24, max_skew_s=300.0, flight_recorder="pickle", truncated=0.2), True),
}


def _run(kind: str, seed: int, tmp_path: Path) -> tuple[Truth, Diagnosis]:
    knobs, metadata = VARIANTS[seed]
    truth = generate(kind, tmp_path, seed=1000 + seed, knobs=knobs)
    scan = scan_sources(default_matcher(), expand([str(tmp_path)]), 2026)
    return truth, diagnose(scan.results, default_matcher().catalog, None,
                           exit_codes=truth.exit_codes if metadata else None)


@pytest.mark.parametrize("seed", sorted(VARIANTS))
@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_the_initiator_is_named_and_the_victims_are_collateral(kind: str, seed: int, tmp_path: Path) -> None:
    truth, d = _run(kind, seed, tmp_path)
    rc = d.root_cause
    assert rc is not None
    if truth.job_wide:
        assert (rc.rank, rc.host) == (None, None), rc.explanation
        return
    if truth.rank is None:
        assert rc.host == truth.host, rc.explanation
    else:
        assert (rc.rank, rc.host) == (truth.rank, truth.host), rc.explanation
    if truth.signature_hint:
        assert any(h in (rc.signature or "") for h in truth.signature_hint.split("|")), rc.signature
    collateral = {r for g in d.collateral for r in g.ranks}
    assert truth.rank not in collateral
    assert len(collateral & truth.collateral) >= 0.9 * len(truth.collateral)
    assert len(collateral - truth.collateral) <= 0.1 * max(1, len(collateral))


def test_a_thousand_ranks_with_a_silent_straggler_and_flight_recorder_dumps(tmp_path: Path) -> None:
    """1,024 ranks, one never joins collective #4821 and prints only the dump signal; every dump says so."""
    truth = generate("straggler", tmp_path, seed=7, knobs=Knobs(world_size=1024, flight_recorder="json"))
    scan = scan_sources(default_matcher(), expand([str(tmp_path)]), 2026)
    d = diagnose(scan.results, default_matcher().catalog)
    assert d.root_cause is not None and d.root_cause.rank == truth.rank
    assert any("Flight Recorder" in step for step in d.root_cause.explanation)
    assert len({r for g in d.collateral for r in g.ranks}) == 1023
