"""The consumer hands a poll's shards in a row to a BatchDispatcher together (one Celery task), everything else
alone and in order: offsets are committed only past what was handed on or dead-lettered, so a group the broker
refuses is polled again whole and nothing after it is committed."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ingest.consumer import GROUP_SHARDS, IngestLoop
from ingest.dispatch import BatchDispatcher
from ingest.dlq import DeadLetterWriter
from ingest.kafka import Record
from ingest.testing import RecordingDispatcher
from ingest.topics import DEFAULT_TOPICS
from schemas.errors import RetryableError
from schemas.retry import RetryPolicy
from schemas.wire import LogShard
from tests.fakes.ingest import DlqProducer, ListSource

SHARDS, JOBS = DEFAULT_TOPICS.shards, DEFAULT_TOPICS.jobs


@dataclass
class GroupingDispatcher(RecordingDispatcher):
    groups: list[list[int]] = field(default_factory=list)
    refuse_groups: int = 0

    def submit_shards(self, shards: Sequence[LogShard], headers: Sequence[Mapping[str, str]],
                      data: Sequence[bytes] | None = None) -> None:
        assert data is not None and len(data) == len(shards)  # decoded once, by the consumer's validation
        if self.refuse_groups:
            self.refuse_groups -= 1
            raise RetryableError("broker down", retry_after=0.0)
        self.groups.append([s.seq for s in shards])
        self.shards.extend((s, dict(h)) for s, h in zip(shards, headers, strict=True))


@dataclass
class RewindingSource(ListSource):
    seeks: dict[tuple[str, int], int] = field(default_factory=dict)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self.seeks[(topic, partition)] = offset


def _shard(offset: int, seq: int) -> Record:
    value = json.dumps({"job_id": "j", "rank": 0, "seq": seq, "data": f"line {seq}\n"}).encode()
    return Record(SHARDS, 0, offset, b"j", value, {"traceparent": f"00-{seq:032x}-{seq + 1:016x}-01"})


def _job(offset: int) -> Record:
    return Record(JOBS, 0, offset, b"j", json.dumps({"job_id": "j", "state": "failed"}).encode(), {})


def test_shards_in_a_row_go_together_and_an_event_or_a_bad_message_cuts_the_group() -> None:
    bad = Record(SHARDS, 0, 3, b"j", b"not json", {})
    records = [_shard(0, 0), _shard(1, 1), _shard(2, 2), bad, _shard(4, 3), _job(0), _shard(5, 4)]
    records += [_shard(6 + i, 5 + i) for i in range(GROUP_SHARDS + 1)]
    source, dispatcher = ListSource(records), GroupingDispatcher()
    assert isinstance(dispatcher, BatchDispatcher)
    loop = IngestLoop(source, dispatcher, DeadLetterWriter(DlqProducer()))
    progress = loop.step(threading.Event())
    assert (progress.handed_on, progress.dead_lettered) == (len(records) - 1, 1)
    assert dispatcher.groups[:2] == [[0, 1, 2], [3]]  # cut by the bad message, then by the event
    assert [len(g) for g in dispatcher.groups[2:]] == [GROUP_SHARDS, 2]  # at most GROUP_SHARDS a group
    assert [s.seq for s, _ in dispatcher.shards] == list(range(5 + GROUP_SHARDS + 1))
    assert dispatcher.shards[1][1]["traceparent"]  # each shard keeps its trace context
    assert source.committed == {(SHARDS, 0): 6 + GROUP_SHARDS + 1, (JOBS, 0): 1}


def test_a_refused_group_is_not_committed_and_is_polled_again_whole() -> None:
    records = [_shard(0, 0), _job(0), _shard(1, 1), _shard(2, 2)]
    source, dispatcher = RewindingSource(records), GroupingDispatcher(refuse_groups=1)
    dispatcher.groups.clear()
    loop = IngestLoop(source, dispatcher, DeadLetterWriter(DlqProducer()), backoff=RetryPolicy(0.0, 0.0, None))
    progress = loop.step(threading.Event())
    assert progress.retried and dispatcher.jobs == [] and dispatcher.shards == []
    assert source.committed == {} and source.seeks == {(SHARDS, 0): 0, (JOBS, 0): 0}
