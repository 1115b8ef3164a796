"""The Kafka edge against a real broker (Tansu): ship → consume → Dispatcher, the DLQ, retries, redelivery."""

from __future__ import annotations

import base64
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
import zstandard

from firstfault.cli import main
from ingest.dlq import DeadLetter
from ingest.kafka import KafkaDispatcher, WireProducer
from ingest.testing import RecordingDispatcher
from ingest.topics import DEFAULT_TOPICS, Topics
from schemas.wire import MAX_SHARD_BYTES, JobEvent, LogShard
from sources.shard_data import decode_shard_data
from tests.integration.kafka_helpers import LIMIT_S, committed, committed_total, drive, make_loop, read_topic

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _log_dir(tmp_path: Path) -> dict[str, bytes]:
    """A job's log directory: two nodes, per-rank files, dmesg, a 6 MB file, a huge line, binary junk, empty."""
    rng = random.Random(7)
    files = {
        "node000/rank0.log": b"".join(b"[rank0]: step %d loss %.4f\n" % (i, rng.random()) for i in range(3000)),
        "node000/rank1.log": b"[rank1]: RuntimeError: CUDA error: out of memory\n",
        "node001/rank2.log": b"".join(rng.randbytes(40).hex().encode() + b"\n" for _ in range(75_000)),  # 6 MB
        "node001/dmesg.log": b"[Sun Nov 29 10:14:45 2026] Out of memory: Killed process 31844 (python)\n",
        "node001/rank3.log": b"x" * (5 << 20) + b"\nafter the long line\n",
        "node002/rank4.log": rng.randbytes(300_000) + b"\xff\xfe not utf-8\n",
        "node002/rank5.log": b"",
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return files


def test_a_shipped_directory_arrives_byte_for_byte(kafka_bootstrap: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    files = _log_dir(tmp_path)
    job = f"ship-{uuid.uuid4().hex[:8]}"
    assert main(["ship", "--job", job, "--bootstrap", kafka_bootstrap, str(tmp_path)]) == 0
    assert "a line longer than" in capsys.readouterr().err  # the 5 MiB line was cut, and the user was told

    dispatcher = RecordingDispatcher()
    loop = make_loop(kafka_bootstrap, DEFAULT_TOPICS, dispatcher, f"g-{job}")

    def mine() -> list[LogShard]:
        return [s for s, _ in dispatcher.shards if s.job_id == job]

    try:
        drive(loop, lambda: sum(s.eof for s in mine()) == len(files))
    finally:
        loop.close()
    streams: dict[tuple[str, int | None, str | None], list[LogShard]] = defaultdict(list)
    for shard in mine():
        streams[(shard.stream, shard.rank, shard.host)].append(shard)
    received: dict[str, bytes] = defaultdict(bytes)
    for key, shards in streams.items():
        shards.sort(key=lambda s: s.seq)
        assert [s.seq for s in shards] == list(range(len(shards))), key
        assert [s.eof for s in shards] == [False] * (len(shards) - 1) + [True], key
        for shard in shards:
            assert len(shard.model_dump_json().encode()) <= MAX_SHARD_BYTES
            received[shard.source or ""] += decode_shard_data(shard)
    assert dict(received) == files
    assert len(streams[("other", 2, "node001")]) > 1  # the 6 MB file really was chunked
    assert streams[("dmesg", None, "node001")][0].source == "node001/dmesg.log"


def _good_shard(job: str, seq: int, text: str = "[rank0]: ok\n") -> bytes:
    return LogShard(job_id=job, rank=0, stream="stdout", seq=seq, data=text).model_dump_json().encode()


def test_bad_messages_are_dead_lettered_with_reasons_while_good_ones_flow(kafka_bootstrap: str,
                                                                          topics: Topics) -> None:
    job = "job-dlq"
    good_job = JobEvent(job_id=job, state="failed", world_size=2).model_dump_json().encode()
    bomb = base64.b64encode(zstandard.ZstdCompressor().compress(b"\0" * (40 << 20))).decode()
    truncated_gzip = base64.b64encode(gzip.compress(b"line\n" * 1000)[:-20]).decode()
    bad: dict[str, tuple[str, bytes, bytes | None]] = {
        "malformed": (topics.shards, b'{"job_id": "job-dlq", "seq": 1,, }', job.encode()),
        "truncated": (topics.shards, _good_shard(job, 2)[:30], job.encode()),
        "oversized": (topics.shards, _good_shard(job, 3, "y" * (MAX_SHARD_BYTES + 10)), job.encode()),
        "wrong key": (topics.shards, _good_shard(job, 4), b"another-job"),
        "binary": (topics.jobs, bytes(range(256)), job.encode()),
        "missing field": (topics.jobs, b'{"job_id": "job-dlq", "colour": "red"}', job.encode()),
        "bomb": (topics.shards, json.dumps({"job_id": job, "seq": 5, "compression": "zstd", "data": bomb}).encode(),
                 job.encode()),
        "truncated gzip": (topics.shards, json.dumps({"job_id": job, "seq": 6, "compression": "gzip",
                                                      "data": truncated_gzip}).encode(), job.encode()),
        # issue 27: out of the wire bounds, and nesting that would exhaust the parser's recursion
        "rank 10**30": (topics.shards, b'{"job_id": "job-dlq", "rank": ' + str(10**30).encode() + b', "seq": 7, '
                        b'"data": "x"}', job.encode()),
        "world_size 1e9": (topics.jobs, b'{"job_id": "job-dlq", "state": "failed", "world_size": 1000000000}',
                           job.encode()),
        "100,000 [": (topics.shards, b"[" * 100_000, job.encode()),
    }
    expected_reason = {"malformed": "not JSON", "truncated": "truncated?", "oversized": "over the 1,048,576-byte",
                       "wrong key": "is not the job_id", "binary": "not UTF-8",
                       "missing field": "state: Field required", "bomb": "decompression bomb",
                       "truncated gzip": "gzip data is truncated",
                       "rank 10**30": "rank: Input should be less than or equal to 1048575",
                       "world_size 1e9": "world_size: Input should be less than or equal to 1048576",
                       "100,000 [": "JSON nested deeper than 32 levels"}
    producer = WireProducer(kafka_bootstrap)
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    producer.send(topics.jobs, job.encode(), good_job, trace)
    for topic, value, key in bad.values():
        producer.send(topic, key, value, {})
        producer.send(topics.shards, job.encode(), _good_shard(job, 100 + len(value) % 7), trace)
    producer.flush()
    producer.close()

    dispatcher = RecordingDispatcher()
    group = "g-dlq"
    loop = make_loop(kafka_bootstrap, topics, dispatcher, group, batch=4)
    try:
        drive(loop, lambda: committed_total(kafka_bootstrap, group, topics) == 1 + 2 * len(bad))
    finally:
        loop.close()
    assert len(dispatcher.jobs) == 1 and len(dispatcher.shards) == len(bad)
    # the trace survives: the next hop continues the producer's trace (through the consumer's own span)
    assert all(_trace_id(headers) == _trace_id(trace) for _, headers in dispatcher.jobs + dispatcher.shards)
    letters = [DeadLetter.model_validate_json(r.value) for r in read_topic(kafka_bootstrap, topics.dlq, len(bad))]
    by_original = {letter.original(): letter for letter in letters}
    assert len(letters) == len(bad)
    for name, (topic, value, key) in bad.items():
        letter = by_original[value]  # the original bytes, exactly
        assert expected_reason[name] in letter.reason, (name, letter.reason)
        assert letter.topic == topic and letter.key == (key or b"").decode()


def test_a_refused_hand_off_is_retried_and_committed_only_after(kafka_bootstrap: str, topics: Topics) -> None:
    job = "job-retry"
    producer = WireProducer(kafka_bootstrap)
    for seq in range(3):
        producer.send(topics.shards, job.encode(), _good_shard(job, seq), {})
    producer.flush()
    producer.close()
    group = "g-retry"
    seen_committed: list[tuple[int, int]] = []  # (seq being handed on, offsets committed at that moment)

    def observe(shard: JobEvent | LogShard) -> None:
        seen_committed.append((getattr(shard, "seq", -1), committed_total(kafka_bootstrap, group, topics)))

    dispatcher = RecordingDispatcher(refuse=2, before=observe)
    loop = make_loop(kafka_bootstrap, topics, dispatcher, group)
    try:
        drive(loop, lambda: len(dispatcher.shards) == 3)
        drive(loop, lambda: committed_total(kafka_bootstrap, group, topics) == 3)
    finally:
        loop.close()
    assert [s.seq for s, _ in dispatcher.shards] == [0, 1, 2]  # each handed on exactly once, in order
    assert [seq for seq, _ in seen_committed] == [0, 0, 0, 1, 2]  # refused twice, then taken
    assert all(offset <= seq for seq, offset in seen_committed)  # never committed before its hand-off


def _consumer(kafka_bootstrap: str, topics: Topics, group: str, out: Path, mode: str) -> subprocess.Popen[bytes]:
    prefix = topics.jobs.removesuffix(".jobs")
    code = "import sys; from tests.fakes.ingest import consumer_process; consumer_process(sys.argv[1:])"
    return subprocess.Popen([sys.executable, "-c", code, kafka_bootstrap, prefix, group, str(out), mode], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_lines(out: Path, count: int, process: subprocess.Popen[bytes]) -> list[str]:
    deadline = time.monotonic() + LIMIT_S
    while len(lines := out.read_text().splitlines() if out.exists() else []) < count:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the consumer process handed nothing on"
        time.sleep(0.1)
    return lines


def test_a_consumer_killed_between_hand_off_and_commit_causes_redelivery(kafka_bootstrap: str, topics: Topics,
                                                                         tmp_path: Path) -> None:
    job = "job-kill"
    producer = WireProducer(kafka_bootstrap)
    producer.send(topics.shards, job.encode(), _good_shard(job, 0), {})
    producer.flush()
    producer.close()
    group = "g-kill"
    out = tmp_path / "handed-on.txt"
    doomed = _consumer(kafka_bootstrap, topics, group, out, "hang")
    try:
        assert _wait_for_lines(out, 1, doomed) == [f"shard {job} 0"]
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.communicate(timeout=30)  # reaps it and closes its pipes
    assert committed(kafka_bootstrap, group) == {}  # killed before the commit

    dispatcher = RecordingDispatcher()
    loop = make_loop(kafka_bootstrap, topics, dispatcher, group)
    try:
        drive(loop, lambda: len(dispatcher.shards) == 1)  # after the dead member's session times out
    finally:
        loop.close()
    assert [(s.job_id, s.seq) for s, _ in dispatcher.shards] == [(job, 0)]  # the duplicate downstream must absorb
    assert committed_total(kafka_bootstrap, group, topics) == 1


def test_sigterm_stops_the_consumer_cleanly_after_committing(kafka_bootstrap: str, topics: Topics,
                                                             tmp_path: Path) -> None:
    job = "job-term"
    producer = WireProducer(kafka_bootstrap)
    producer.send(topics.jobs, job.encode(), JobEvent(job_id=job, state="failed").model_dump_json().encode(), {})
    producer.flush()
    producer.close()
    group = "g-term"
    out = tmp_path / "handed-on.txt"
    consumer = _consumer(kafka_bootstrap, topics, group, out, "run")
    try:
        _wait_for_lines(out, 1, consumer)
        deadline = time.monotonic() + LIMIT_S
        while committed_total(kafka_bootstrap, group, topics) != 1:
            assert time.monotonic() < deadline, "the handed-on event was never committed"
            time.sleep(0.1)
        consumer.send_signal(signal.SIGTERM)
        stdout, stderr = consumer.communicate(timeout=30)
    finally:
        if consumer.poll() is None:
            os.kill(consumer.pid, signal.SIGKILL)
            consumer.communicate(timeout=30)
    assert consumer.returncode == 0, stderr.decode()
    assert stdout.decode().strip() == "stopped cleanly"


def test_the_kafka_dispatcher_hands_on_to_the_consumer_with_trace_context(kafka_bootstrap: str,
                                                                          topics: Topics) -> None:
    producer = WireProducer(kafka_bootstrap)
    upstream = KafkaDispatcher(producer, topics)  # a producer handing on to Kafka (a relay, a test rig)
    trace = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    upstream.submit_job(JobEvent(job_id="job-http", state="failed"), trace)
    upstream.submit_shard(LogShard(job_id="job-http", rank=1, seq=0, eof=True, data="boom\n"), trace)
    producer.close()
    dispatcher = RecordingDispatcher()
    loop = make_loop(kafka_bootstrap, topics, dispatcher, "g-http")
    try:
        drive(loop, lambda: len(dispatcher.jobs) == 1 and len(dispatcher.shards) == 1)
    finally:
        loop.close()
    [(event, job_headers)], [(shard, shard_headers)] = dispatcher.jobs, dispatcher.shards
    assert (event.job_id, event.state, shard.rank, decode_shard_data(shard)) == ("job-http", "failed", 1, b"boom\n")
    assert _trace_id(job_headers) == _trace_id(shard_headers) == _trace_id(trace)


def _trace_id(headers: dict[str, str]) -> str:
    return headers["traceparent"].split("-")[1]
