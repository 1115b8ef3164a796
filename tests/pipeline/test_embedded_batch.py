"""The embedded runner hands the shards waiting in its queue to the pipeline together, in arrival order, and
runs each alone when their batch fails (so one bad shard neither blocks nor dead-letters the others)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.embedded import BATCH, EmbeddedRunner
from schemas.wire import JobEvent, LogShard
from tests.pipeline.helpers import failed_job


def _shard(seq: int) -> LogShard:
    return LogShard(job_id="j", rank=0, stream="stdout", seq=seq, eof=False, data=f"line {seq}\n")


class FakePipeline:
    """What the runner calls, recorded; a batch holding `poison` fails as a whole, the poison alone too."""

    def __init__(self, poison: int | None = None) -> None:
        self.calls: list[tuple[str, list[int]]] = []
        self.gate = threading.Event()
        self.poison = poison
        self.store: Any = None

    def accept_job(self, event: JobEvent, headers: Mapping[str, str] | None = None) -> None:
        self.gate.wait(10)  # the shards pile up behind the event meanwhile
        self.calls.append(("job", []))

    def accept_shards(self, shards: Sequence[LogShard], headers: object = None) -> list[bool]:
        if any(s.seq == self.poison for s in shards):
            raise RuntimeError("poisoned batch")
        self.calls.append(("batch", [s.seq for s in shards]))
        return [True] * len(shards)

    def accept_shard(self, shard: LogShard, headers: Mapping[str, str] | None = None) -> bool:
        if shard.seq == self.poison:
            raise ValueError("poisoned shard")
        self.calls.append(("one", [shard.seq]))
        return True


def _run(fake: FakePipeline, count: int) -> EmbeddedRunner:
    runner = EmbeddedRunner(queue_size=1000)
    runner.bind(fake)  # type: ignore[arg-type]
    runner.start()
    runner.submit_job(failed_job("j"), {})
    for seq in range(count):
        runner.submit_shard(_shard(seq), {})
    runner.submit_job(failed_job("j"), {})
    fake.gate.set()
    deadline = time.monotonic() + 20
    while not runner.idle() and time.monotonic() < deadline:
        time.sleep(0.01)
    runner.stop()
    return runner


def test_waiting_shards_go_together_in_order_and_each_once() -> None:
    fake = FakePipeline()
    _run(fake, 150)
    kinds = [kind for kind, _ in fake.calls]
    assert kinds[0] == "job" and kinds[-1] == "job"  # the event after the shards waits for them
    seqs = [seq for _, batch in fake.calls for seq in batch]
    assert seqs == list(range(150))
    sizes = [len(batch) for kind, batch in fake.calls if kind == "batch"]
    assert max(sizes) == BATCH and len(sizes) < 10  # together, not one a call


def test_a_failed_batch_is_taken_one_shard_at_a_time() -> None:
    fake = FakePipeline(poison=70)
    runner = _run(fake, 100)
    seqs = sorted(seq for _, batch in fake.calls for seq in batch)
    assert seqs == [s for s in range(100) if s != 70]  # every other shard kept
    assert ("one", [71]) in fake.calls  # the poisoned batch's others alone
    assert any("poisoned shard" in reason for reason in runner.failures)
