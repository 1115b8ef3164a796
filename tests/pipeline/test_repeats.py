"""A job whose restarts fail the same way: each attempt's incident counts the attempts before it that failed so
(`repeats`), and the third is critical whatever the entry's severity; on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from firstfault.cli import main
from notifiers.slack_message import incident_blocks
from pipeline.service import Pipeline
from scan.engine import default_matcher
from schemas.clock import ManualClock
from store.incidents import Store
from tests.pipeline.helpers import RecordingScheduler, failed_job, shards_of

JOB = "j-restarts"
NAN = ("[rank0]:[titan] 2026-11-29 10:12:00,102 - root - ERROR - RuntimeError: Function 'LogSoftmaxBackward0' "
       "returned nan values in its 0th output.\n")


def test_the_same_failure_on_every_restart_counts_and_the_third_is_critical(  # type: ignore[no-untyped-def]
        db_url: str, capsys, tmp_path: Path) -> None:
    logs = tmp_path / "logs"  # not tmp_path itself: the SQLite database lives there
    logs.mkdir()
    (logs / "rank0.log").write_text(NAN)
    store = Store.open(db_url)
    clock = ManualClock()
    pipe = Pipeline(store, default_matcher(), RecordingScheduler(), clock)
    try:
        seen = []
        for attempt in range(3):
            pipe.accept_job(failed_job(JOB, world_size=1, attempt=attempt))
            for shard in shards_of(JOB, logs):
                pipe.accept_shard(shard)
            clock.advance(31)
            incident = pipe.correlate(JOB)
            assert incident is not None and incident.attempt == attempt
            seen.append((incident.repeats, incident.severity))
        assert incident.signature == "numerics.anomaly_nan"  # its entry's severity: error
        assert seen == [(0, "error"), (1, "error"), (2, "critical")]
        stored = store.incident_for_job(JOB)
        assert stored is not None and stored.repeats == 2
        assert main(["incidents", "show", stored.id, "--db", db_url, "--format", "json"]) == 0
        assert '"repeats": 2' in capsys.readouterr().out
        fields = [f["text"] for b in incident_blocks(stored, "https://ff.example") for f in b.get("fields", [])]
        assert "*Repeats*\n2 earlier attempt(s) of this job failed the same way" in fields
    finally:
        store.close()
