"""The same failure on the same host after its incident was resolved is a regression (issue 26): the new
incident names the resolved one, its severity is one level up, and the post and the page say so; on SQLite and
PostgreSQL. Another host, or an earlier incident still open, is no regression."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from notifiers.pagerduty import build_event
from notifiers.slack_message import incident_blocks
from pipeline.service import Pipeline
from scan.engine import default_matcher
from schemas.clock import ManualClock
from schemas.incident import Incident
from store.incidents import Store
from tests.pipeline.helpers import RecordingScheduler, failed_job, shards_of


def _xid_job(root: Path, host: str, bus: str = "3b") -> Path:
    """rank 0's GPU raised Xid 13 (a graphics engine exception, catalog severity error) in its node's kernel log."""
    (root / host).mkdir(parents=True)
    (root / host / "rank0.log").write_text("[rank0]: step 1200 loss 2.31\n")
    (root / host / "dmesg.log").write_text(
        f"[Sun Nov 29 10:14:45 2026] NVRM: Xid (PCI:0000:{bus}:00): 13, pid=4242, name=python, Graphics SM Warp "
        "Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n")
    return root


def _run(pipe: Pipeline, clock: ManualClock, job: str, logs: Path) -> Incident:
    pipe.accept_job(failed_job(job, world_size=1))
    for shard in shards_of(job, logs):
        pipe.accept_shard(shard)
    clock.advance(31)
    incident = pipe.correlate(job)
    assert incident is not None
    return incident


def test_the_same_fault_on_the_same_host_after_a_fix_is_a_regression(db_url: str, tmp_path: Path) -> None:
    store = Store.open(db_url)
    clock = ManualClock()
    pipe = Pipeline(store, default_matcher(), RecordingScheduler(), clock)
    try:
        first = _run(pipe, clock, "j1", _xid_job(tmp_path / "a", "node004"))
        assert (first.signature, first.host, first.regression_of) == ("xid.13", "node004", None)
        unresolved = _run(pipe, clock, "j2", _xid_job(tmp_path / "b", "node004"))
        assert unresolved.regression_of is None  # the first is still open: the same fault, not a failed fix
        assert store.resolve(first.id, "raised the cgroup limit", datetime.now(UTC)) is not None
        again = _run(pipe, clock, "j3", _xid_job(tmp_path / "c", "node004"))
        elsewhere = _run(pipe, clock, "j4", _xid_job(tmp_path / "d", "node009"))
    finally:
        store.close()
    assert again.regression_of == first.id
    assert (first.severity, unresolved.severity, again.severity, elsewhere.severity) == (
        "error", "error", "critical", "error")  # the entry's severity, one level up for the regression only
    assert elsewhere.regression_of is None
    fields = [f["text"] for b in incident_blocks(again, "https://ff.example") for f in b.get("fields", [])]
    assert any(f.startswith("*Regression*") and first.id in f for f in fields)
    assert build_event(again, "key", "https://ff.example")["payload"]["custom_details"]["regression_of"] == first.id



def test_another_gpu_of_the_host_failing_the_same_way_is_no_regression(db_url: str, tmp_path: Path) -> None:
    """The GPU at 3b:00 was replaced and its incident resolved; the one at 5e:00 raising the same Xid is a new
    fault of another GPU, not the fix failing. The same GPU again is."""
    store = Store.open(db_url)
    clock = ManualClock()
    pipe = Pipeline(store, default_matcher(), RecordingScheduler(), clock)
    try:
        first = _run(pipe, clock, "g1", _xid_job(tmp_path / "a", "node004", bus="3b"))
        assert store.resolve(first.id, "replaced the GPU at 3b:00", datetime.now(UTC)) is not None
        other_gpu = _run(pipe, clock, "g2", _xid_job(tmp_path / "b", "node004", bus="5e"))
        same_gpu = _run(pipe, clock, "g3", _xid_job(tmp_path / "c", "node004", bus="3b"))
    finally:
        store.close()
    assert other_gpu.regression_of is None and other_gpu.severity == "error"
    assert same_gpu.regression_of == first.id and same_gpu.severity == "critical"
