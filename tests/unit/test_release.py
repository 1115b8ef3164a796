"""Handing the scan's results over (diagnose(..., release=True), what the CLI does) changes no diagnosis: what later
steps read of the sources (names, which had lines, the structured files, how many) is kept as correlator/release.py's
Read once the list is emptied. The job here is the simulator's (simulate/training_logs.py), with the scheduler's
job.json beside its logs (docs/contracts.md, firstfault.jobs: its world_size is what the impact reads)."""

from __future__ import annotations

import json
from pathlib import Path

from catalog.loader import default_catalog
from correlator.diagnose import diagnose
from correlator.reading import SourceResult
from scan.engine import default_matcher, scan_sources
from simulate.training_logs import generate
from sources.files import expand


def test_results_handed_over_are_let_go_and_diagnosed_as_kept(tmp_path: Path) -> None:
    generate(tmp_path, 16, size=16 * 2_000, seed=3, compact=True, survivors="all", quiet=True)
    (tmp_path / "logs" / "job.json").write_text(json.dumps({"job_id": "j-1", "state": "failed", "world_size": 64}))
    matcher, catalog = default_matcher("auto"), default_catalog()

    def scanned() -> list[SourceResult]:
        return scan_sources(matcher, expand([str(tmp_path / "logs")]), 2026, jobs=1).results

    kept = diagnose(scanned(), catalog)
    handed = scanned()
    released = diagnose(handed, catalog, release=True)
    assert handed == []
    assert released.model_dump_json() == kept.model_dump_json()
    assert released.root_cause is not None and released.root_cause.rank is not None
    assert released.impact is not None and released.impact.world_size == 64  # the job's, read from job.json
