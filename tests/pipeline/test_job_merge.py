"""Two collectors send a JobEvent for one job attempt (the Slurm epilog: the nodes and exit codes; torchrun: the
rank → host map): the store keeps both senders' fields (schemas.wire.merged), on SQLite and PostgreSQL, and the
incident is diagnosed from the merged event; a later attempt's event replaces the earlier attempt's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from pipeline.service import Pipeline
from scan.engine import default_matcher
from schemas.clock import ManualClock
from schemas.wire import JobEvent, LogShard
from store.incidents import Store
from tests.pipeline.helpers import RecordingScheduler

T0 = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
SLURM = {"job_id": "4242", "state": "failed", "scheduler": "slurm", "cluster": "c1", "team": "llm",
         "hosts": ["node001", "node002"], "exit_codes": {"node002": -9, "node001": 1},
         "ended_at": "2026-12-03T10:15:00Z", "labels": {"partition": "gpu"}}
TORCHRUN = {"job_id": "4242", "state": "failed", "world_size": 4,
            "rank_hosts": {"0": "node001", "1": "node001", "2": "node002", "3": "node002"},
            "exit_codes": {"2": -9, "node001": 137}, "labels": {"launcher": "torchrun"}}


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store.open(db_url)
    yield opened
    opened.close()


def _send(store: Store, *events: dict[str, object]) -> JobEvent | None:
    for n, event in enumerate(events):
        store.record_job(JobEvent.model_validate(event), T0 + timedelta(seconds=n))
    return store.job_event("4242")


def test_the_second_collectors_event_adds_to_the_first(store: Store) -> None:
    event = _send(store, SLURM, TORCHRUN)
    assert event is not None
    assert (event.scheduler, event.cluster, event.team, event.world_size) == ("slurm", "c1", "llm", 4)
    assert event.hosts == ["node001", "node002"]
    assert event.rank_hosts == {0: "node001", 1: "node001", 2: "node002", 3: "node002"}
    # maps are unioned; where both name a key, the later event's value wins
    assert event.exit_codes == {"node002": -9, "node001": 137, "2": -9}
    assert event.labels == {"partition": "gpu", "launcher": "torchrun"}
    assert event.ended_at == datetime(2026, 12, 3, 10, 15, tzinfo=UTC)


def test_either_order_keeps_every_field_and_a_late_started_undoes_no_end(store: Store) -> None:
    event = _send(store, TORCHRUN, SLURM, {"job_id": "4242", "state": "started", "hosts": ["node003"]})
    assert event is not None
    assert event.state == "failed" and event.world_size == 4 and event.scheduler == "slurm"
    assert event.hosts == ["node001", "node002", "node003"]
    assert event.exit_codes["node001"] == 1  # Slurm's came last this time


def test_a_later_attempt_replaces_the_earlier_attempts_event(store: Store) -> None:
    event = _send(store, SLURM, TORCHRUN, {"job_id": "4242", "state": "failed", "attempt": 1, "hosts": ["node009"]})
    assert event is not None
    assert (event.attempt, event.hosts, event.rank_hosts, event.exit_codes) == (1, ["node009"], {}, {})


def test_the_incident_is_diagnosed_from_both_senders_fields(db_url: str) -> None:
    """Rank 2's log says nothing of its host; torchrun's map puts it on node002, the node Slurm saw killed."""
    store = Store.open(db_url)
    try:
        clock = ManualClock(T0)
        pipe = Pipeline(store, default_matcher(), RecordingScheduler(), clock)
        pipe.accept_job(JobEvent.model_validate(SLURM))
        pipe.accept_job(JobEvent.model_validate(TORCHRUN))
        oom = ("[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
               "capacity of 79.10 GiB of which 1.06 GiB is free.\n")
        for rank in range(4):
            pipe.accept_shard(LogShard(job_id="4242", rank=rank, seq=0, eof=True,
                                       data=oom if rank == 2 else f"rank {rank} step 240\n"))
        clock.advance(31)
        incident = pipe.correlate("4242")
        assert incident is not None
        assert (incident.signature, incident.rank, incident.host) == ("cuda.oom", 2, "node002")
        assert (incident.cluster, incident.team) == ("c1", "llm")  # Slurm's fields, though torchrun's came last
    finally:
        store.close()
