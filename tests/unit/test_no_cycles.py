"""`firstfault diagnose` runs without the cyclic collector (memtune.no_collections): that is safe only while
scanning and correlating make no reference cycles, which would then stay in memory until the process ends."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from scan.engine import default_matcher, diagnose_sources
from schemas.diagnosis import Diagnosis
from simulate import SCENARIOS, Knobs, generate
from sources.files import expand


@pytest.fixture
def collector_off() -> Iterator[None]:
    default_matcher()  # start-up may build cycles (the catalog's models): it is frozen, not scanned, by the CLI
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _diagnosed(root: Path, jobs: int) -> tuple[Diagnosis, int]:
    """The diagnosis of ``root``, and how many unreachable objects it left behind."""
    gc.collect()  # what writing the logs left
    found = diagnose_sources(default_matcher(), expand([str(root)]), 2026, jobs=jobs)
    return found, gc.collect()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_diagnosing_a_simulated_failure_makes_no_cycles(scenario: str, tmp_path: Path, collector_off: None) -> None:
    generate(scenario, tmp_path, seed=1, knobs=Knobs(world_size=16, steps=40))
    assert _diagnosed(tmp_path, jobs=1)[1] == 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_diagnosing_a_long_job_makes_no_cycles(jobs: int, tmp_path: Path, collector_off: None) -> None:
    from simulate.training_logs import generate as generate_bench

    truth = generate_bench(tmp_path, ranks=16, size=6_000_000, seed=3, failure="oom_kill")
    found, unreachable = _diagnosed(tmp_path / "logs", jobs)
    assert unreachable == 0
    assert found.root_cause is not None and found.root_cause.signature == "host.oom_killer"
    assert found.root_cause.rank == truth["victim"]


def test_a_cycle_would_be_seen(collector_off: None) -> None:
    """The check can fail: one cycle left behind is counted."""
    ring: list[object] = []
    ring.append(ring)
    del ring
    assert gc.collect() > 0
