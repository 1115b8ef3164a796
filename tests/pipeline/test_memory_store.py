"""The Pipeline on the in-memory store (store.testing.MemoryStore) diagnoses as on SQLite: the same incident,
revised by a late shard and closed by the next attempt's success the same way, with no database: what lets the
pipeline's unit tests run without one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from pipeline.service import Pipeline
from scan.engine import default_matcher
from schemas.clock import ManualClock
from schemas.wire import JobEvent, LogShard
from store.incidents import Store
from store.testing import MemoryStore
from tests.pipeline.helpers import RecordingScheduler

T0 = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
OOM = ("[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
       "capacity of 79.10 GiB of which 1.06 GiB is free.\n")


def _run(store: Any) -> list[tuple[object, ...]]:
    clock = ManualClock(T0)
    scheduler = RecordingScheduler()
    # Pipeline is typed with the SQL Store (its callers reach dead letters and the sweep through it); MemoryStore
    # keeps to the JobStore and PayloadStore ports, which is all the Pipeline's own calls reach.
    pipe = Pipeline(cast(Store, store), default_matcher(), scheduler, clock)
    pipe.accept_job(JobEvent.model_validate({"job_id": "j", "state": "failed", "world_size": 4,
                                             "rank_hosts": {"0": "n1", "1": "n1", "2": "n2", "3": "n2"}}))
    for rank in range(3):
        pipe.accept_shard(LogShard(job_id="j", rank=rank, seq=0, eof=True, data=OOM if rank == 2 else "step 9\n"))
    pipe.accept_shards([LogShard(job_id="j", rank=rank, seq=0, eof=True, data="step 9\n") for rank in (3, 3)])
    seen = []
    clock.advance(31)
    first = pipe.correlate("j")
    assert first is not None
    seen.append((first.signature, first.rank, first.host, first.revision))
    assert pipe.correlate("j") is None  # nothing new since: skipped
    pipe.accept_shard(LogShard(job_id="j", rank=1, stream="stderr", seq=0, eof=True,
                               data="[rank1]: RuntimeError: NCCL communicator was aborted on rank 1.\n"))
    clock.advance(11)
    again = pipe.correlate("j")
    seen.append((again.revision, again.changes) if again else None)
    pipe.accept_job(JobEvent.model_validate({"job_id": "j", "state": "succeeded", "attempt": 1}))
    closed = store.incident_for_job("j")  # attempt 1's success closed attempt 0's incident
    seen.append((closed.state, closed.revision, closed.changes) if closed else None)
    return [*seen, tuple(scheduler.calls)]  # when each correlation was asked for, too


def test_the_pipeline_diagnoses_the_same_on_the_in_memory_store(sqlite_url: str) -> None:
    memory = _run(MemoryStore())
    assert memory[0] == ("cuda.oom", 2, "n2", 1)
    store = Store.open(sqlite_url)
    try:
        assert _run(store) == memory
    finally:
        store.close()
