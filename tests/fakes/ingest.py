"""Test doubles for the ingest edge: a consumer over a list of records, a DLQ producer that keeps what it is sent,
and the entry point of a consumer process the tests kill or stop with a signal. (The in-memory Source and the
recording Dispatcher the package ships are in ingest/testing.py.)"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ingest.kafka import Record
from schemas.wire import JobEvent, LogShard


@dataclass
class ListSource:
    """A consumer over a fixed list of records: one batch, then nothing."""

    records: list[Record]
    committed: dict[tuple[str, int], int] = field(default_factory=dict)

    def poll(self, timeout_s: float) -> list[Record]:
        out, self.records = self.records, []
        return out

    def commit(self, next_offsets: Mapping[tuple[str, int], int]) -> None:
        self.committed.update(next_offsets)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        raise AssertionError("nothing is retried here")

    def close(self) -> None:
        pass


@dataclass
class DlqProducer:
    sent: list[bytes] = field(default_factory=list)

    def send(self, topic: str, key: bytes | None, value: bytes, headers: Mapping[str, str]) -> None:
        self.sent.append(value)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class FileDispatcher:
    """Hands off by appending `job_id seq` to a file (fsynced: durable), then optionally hangs forever, as a
    consumer killed between hand-off and commit would."""

    def __init__(self, path: str, hang: bool) -> None:
        self._path = path
        self._hang = hang

    def submit_job(self, event: JobEvent, headers: Mapping[str, str]) -> None:
        self._write(f"job {event.job_id}")

    def submit_shard(self, shard: LogShard, headers: Mapping[str, str], data: bytes | None = None) -> None:
        self._write(f"shard {shard.job_id} {shard.seq}")

    def _write(self, line: str) -> None:
        with open(self._path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())
        while self._hang:
            time.sleep(3600)


def consumer_process(argv: list[str]) -> None:
    """`python -c 'from tests.fakes.ingest import consumer_process; ...' BOOTSTRAP PREFIX GROUP OUT hang|run`."""
    from ingest.consumer import kafka_ingest, stop_on_signals
    from ingest.topics import Topics
    from schemas.retry import RetryPolicy

    bootstrap, prefix, group, out, mode = argv
    topics = Topics(f"{prefix}.jobs", f"{prefix}.shards", f"{prefix}.dlq")
    stop = threading.Event()
    stop_on_signals(stop)
    loop = kafka_ingest(bootstrap, FileDispatcher(out, hang=mode == "hang"), topics, group, poll_timeout_s=0.2,
                        backoff=RetryPolicy(0.05, 30.0, None))
    loop.run(stop)
    sys.stdout.write("stopped cleanly\n")
