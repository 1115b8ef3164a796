"""build_events makes the events of context lines only where a later step reads them (issue 23: a survivor's work
status was one event a rank, which nothing after the failures are picked reads)."""

from __future__ import annotations

from pathlib import Path

from correlator.diagnose import CONTEXT_READ
from correlator.events import build_events
from correlator.identity import build_identity
from scan.engine import default_matcher, scan_sources
from schemas.findings import Role
from simulate.training_logs import generate
from sources.files import expand


def test_context_events_are_made_only_for_the_signatures_read(tmp_path: Path) -> None:
    generate(tmp_path / "job", 16, size=16 * 1_400, seed=7, compact=True, survivors="all", quiet=True)
    matcher = default_matcher()
    results = scan_sources(matcher, expand([str(tmp_path / "job" / "logs")]), 2026).results
    findings = [f for r in results for f in r.findings]
    ids = build_identity([c for r in results for c in r.context])
    every = build_events(findings, matcher.catalog, ids)
    kept = build_events(findings, matcher.catalog, ids, context_read=frozenset({"pytorch.c10d.work_status"}))
    none = build_events(findings, matcher.catalog, ids, context_read=frozenset())
    assert any(ev.role is Role.CONTEXT for ev in every)  # a survivor's work status, one a rank
    assert [ev.best.order for ev in none] == [ev.best.order for ev in every if ev.role is not Role.CONTEXT]
    assert [ev.best.order for ev in kept] == [ev.best.order for ev in every if ev.role is not Role.CONTEXT
                                              or ev.best.signature == "pytorch.c10d.work_status"]
    assert {"pytorch.checkpoint.save_hang", "torchrun.no_error_file"} == CONTEXT_READ
