"""The wire models' bounds, where they are declared (schemas/wire.py) and where they are enforced: the exported
JSON Schema says the same, the Kafka path dead-letters an out-of-bound message with its reason and original bytes,
and no number in a message sizes the work done for it."""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from correlator.jobs import readiness
from correlator.shards import StoredShard, complete_sources, source_key
from ingest.consumer import IngestLoop
from ingest.dlq import DeadLetter, DeadLetterWriter
from ingest.kafka import Record
from ingest.testing import RecordingDispatcher
from ingest.topics import DEFAULT_TOPICS
from ingest.wire_schema import json_schema
from schemas.wire import MAX_RANK, MAX_SEQ, MAX_WORLD_SIZE, JobEvent
from tests.fakes.ingest import DlqProducer, ListSource

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def test_the_json_schema_carries_the_bounds() -> None:
    job = json_schema("job-event")["properties"]
    shard = json_schema("log-shard")["properties"]
    assert job["world_size"]["anyOf"][0]["maximum"] == MAX_WORLD_SIZE
    assert job["rank_hosts"]["maxProperties"] == MAX_WORLD_SIZE
    assert job["rank_hosts"]["propertyNames"]["pattern"] == "^(0|[1-9][0-9]{0,6})$"
    assert job["labels"]["maxProperties"] == 64
    assert shard["rank"]["anyOf"][0]["maximum"] == MAX_RANK
    assert shard["seq"]["maximum"] == MAX_SEQ
    assert job["job_id"]["maxLength"] == shard["job_id"]["maxLength"] == 256


def test_an_eof_at_the_highest_seq_counts_only_the_shards_that_came() -> None:
    """A source whose eof shard says seq 2**31-1: complete_sources counted set(range(seq + 1)) (2**31 ints)."""
    key = source_key("stdout", 0, None, None)
    tracemalloc.start()
    try:
        started = time.monotonic()
        complete = complete_sources([StoredShard(key, 0, False, {}), StoredShard(key, MAX_SEQ, True, {})])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert complete == set() and time.monotonic() - started < 1 and peak < 1 << 20
    assert complete_sources([StoredShard(key, 1, True, {}), StoredShard(key, 0, False, {})]) == {key}


def test_readiness_of_the_largest_job_costs_what_arrived() -> None:
    job = JobEvent(job_id="j", state="failed", world_size=MAX_WORLD_SIZE)
    done = {source_key("stdout", r, None, None) for r in range(4)}
    tracemalloc.start()
    try:
        ready = readiness(job, NOW, done, done, NOW, timedelta(seconds=30))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not ready.ready and peak < 1 << 20
    small = JobEvent(job_id="j", state="failed", world_size=4)
    assert readiness(small, NOW, done, done, NOW, timedelta(seconds=30)).ready


BAD = {
    "rank 10**30": (DEFAULT_TOPICS.shards, b'{"job_id": "j", "rank": ' + str(10**30).encode() + b', "seq": 0, '
                    b'"data": "x"}', "rank: Input should be less than or equal to 1048575"),
    "world_size 1e9": (DEFAULT_TOPICS.jobs, b'{"job_id": "j", "state": "failed", "world_size": 1000000000}',
                       "world_size: Input should be less than or equal to 1048576"),
    "100,000 [": (DEFAULT_TOPICS.shards, b"[" * 100_000, "JSON nested deeper than 32 levels"),
    "5,000 digits": (DEFAULT_TOPICS.jobs, b'{"job_id": "j", "attempt": ' + b"7" * 5000 + b"}", "digits"),
}


def test_the_consumer_dead_letters_each_out_of_bound_message_and_goes_on() -> None:
    good = Record(DEFAULT_TOPICS.shards, 0, len(BAD), b"j", b'{"job_id": "j", "rank": 3, "seq": 0, "data": "x"}', {})
    records = [Record(topic, 0, i, b"j", value, {}) for i, (topic, value, _) in enumerate(BAD.values())]
    source, producer, dispatcher = ListSource([*records, good]), DlqProducer(), RecordingDispatcher()
    loop = IngestLoop(source, dispatcher, DeadLetterWriter(producer, clock=lambda: NOW))
    progress = loop.step(threading.Event())
    assert (progress.dead_lettered, progress.handed_on) == (len(BAD), 1)
    letters = [DeadLetter.model_validate(json.loads(v)) for v in producer.sent]
    for letter, (topic, value, reason) in zip(letters, BAD.values(), strict=True):
        assert letter.topic == topic and reason in letter.reason
        assert letter.original() == value  # the bytes the producer sent, to fix and re-produce
    assert [s.rank for s, _ in dispatcher.shards] == [3]
    assert source.committed == {(DEFAULT_TOPICS.shards, 0): len(BAD) + 1, (DEFAULT_TOPICS.jobs, 0): 4}


@pytest.mark.parametrize("world", [MAX_WORLD_SIZE + 1, 10**12])
def test_a_log_line_claiming_an_impossible_world_size_sizes_nothing(world: int) -> None:
    """DeepSpeed's 'world_size=N' claims: a garbled N past any job's is ignored, not enumerated."""
    from catalog.loader import default_catalog
    from correlator.derived import _launch_ranks
    from correlator.kept import ContextRecord
    from correlator.speakers import Who

    claims = [ContextRecord("rank_claim", {"world": str(world), "rank": str(r)}, f"n{r}.log", 1, Who(host=f"n{r}"),
                            None) for r in (0, 0)]
    started = time.monotonic()
    assert _launch_ranks(claims, default_catalog(), []) == []
    assert time.monotonic() - started < 1


def test_a_bug_in_validation_dead_letters_the_message_instead_of_stopping_the_consumer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import ingest.consumer

    def broken(kind: object, value: object, key: object) -> None:
        raise MemoryError("a bug")

    monkeypatch.setattr(ingest.consumer, "validate_packed", broken)
    producer = DlqProducer()
    loop = IngestLoop(ListSource([Record(DEFAULT_TOPICS.jobs, 0, 0, b"j", b"{}", {})]), RecordingDispatcher(),
                      DeadLetterWriter(producer, clock=lambda: NOW))
    assert loop.step(threading.Event()).dead_lettered == 1
    letter = DeadLetter.model_validate(json.loads(producer.sent[0]))
    assert letter.reason == "could not be validated (MemoryError: a bug)" and letter.original() == b"{}"


@pytest.mark.parametrize(("flags", "why"), [(["--rank", "2000000"], "rank: Input should be less than or equal to"),
                                            (["--host", "h" * 300], "host: String should have at most 255")])
def test_ship_refuses_out_of_bound_flags_with_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            flags: list[str], why: str) -> None:
    from firstfault.cli import main

    log = tmp_path / "x.log"
    log.write_text("hello\n")
    assert main(["ship", "--url", "http://127.0.0.1:9", "--job", "j", *flags, str(log)]) == 2
    assert why in capsys.readouterr().err
