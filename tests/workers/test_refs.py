"""Celery tasks carry a ShardRef, not the shard (issue 24, item 5): the edge that validated a shard stores its data
as the producer packed it (compressed, with its compression) and sends a reference; the worker loads it, inflates
it under the edge's bound, scans it, and drops the payload in the transaction that records the shard. The tasks run
here in-process (Task.apply) on a SQLite store; tests/integration/test_celery_refs.py runs them in real workers on
Redis and PostgreSQL."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import zstandard
from fastapi import FastAPI

import pipeline.scanning as pipeline_scanning
import pipeline.service as pipeline_service
import sources.shard_data as shard_data
from api.ingest import ingest_router
from ingest.consumer import IngestLoop
from ingest.dlq import DeadLetterWriter
from ingest.kafka import Record
from ingest.topics import DEFAULT_TOPICS
from pipeline.service import Pipeline
from pipeline.sweep import resend_payloads
from scan.engine import default_matcher
from schemas.clock import ManualClock
from schemas.errors import InvalidMessage, TransportError
from schemas.wire import LogShard
from store.dead_letters import listed
from store.incidents import Store
from store.ports import ShardPayload, ShardRef
from store.testing import MemoryPayloadStore
from tests.api.server import serving
from tests.fakes.ingest import DlqProducer, ListSource
from tests.pipeline.helpers import EXAMPLE, RecordingScheduler, failed_job
from workers import tasks
from workers.dispatch import CeleryDispatcher, StoringDispatcher

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
LOG = (EXAMPLE / "node004" / "dmesg.log").read_bytes()


@dataclass
class FakeApp:
    """What CeleryDispatcher needs of a Celery app: send_task, recorded. `fail` refuses that many sends."""

    sent: list[tuple[str, tuple[Any, ...], dict[str, str]]] = field(default_factory=list)
    fail: int = 0

    def send_task(self, name: str, args: tuple[Any, ...], headers: dict[str, str] | None = None,
                  **_: object) -> None:
        if self.fail:
            self.fail -= 1
            raise ConnectionError("broker down")
        self.sent.append((name, args, dict(headers or {})))


@dataclass
class Rig:
    store: Store
    pipeline: Pipeline
    app: FakeApp
    dispatcher: StoringDispatcher
    clock: ManualClock

    def run_sent(self) -> None:
        """Every task sent so far, run as a worker would, then forgotten."""
        sent, self.app.sent = self.app.sent, []
        for name, args, headers in sent:
            task = tasks.match_shard if name == "firstfault.match_shard" else tasks.match_shards
            task.apply(args=args, headers=headers)

    def payload_rows(self) -> int:
        import sqlalchemy as sa
        with self.store.engine.connect() as conn:
            return int(conn.execute(sa.text("select count(*) from shard_payloads")).scalar_one())

    def shards(self, job_id: str) -> list[tuple[str, int]]:
        return sorted((s.key.name, s.seq) for s in self.store.job(job_id).shards)


@pytest.fixture
def rig(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    store = Store.open(sqlite_url)
    clock = ManualClock(T0)
    pipe = Pipeline(store, default_matcher(), RecordingScheduler(), clock)
    monkeypatch.setattr(tasks, "pipeline", lambda: pipe)
    app = FakeApp()
    yield Rig(store, pipe, app, StoringDispatcher(app, pipe), clock)  # type: ignore[arg-type]
    store.close()


def zstd_shard(job_id: str, seq: int = 0, eof: bool = True, data: bytes = LOG, host: str = "node004",
               source: str = "node004/dmesg.log") -> LogShard:
    packed = base64.b64encode(zstandard.ZstdCompressor().compress(data)).decode()
    return LogShard(job_id=job_id, host=host, stream="dmesg", seq=seq, eof=eof, compression="zstd", data=packed,
                    source=source)


@dataclass
class Counts:
    inflated: int = 0  # zstd streams decompressed (sources.shard_data: checking or inflating a shard's data)
    validated: int = 0  # LogShard models validated from JSON-shaped input
    kept: int = 0  # bytes of those streams joined into a log (what the edge's check lets go of is not)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    seen = Counts()
    unzstd, inflate = shard_data._unzstd, shard_data.inflate

    def counted_unzstd(packed: bytes, limit: int) -> Iterator[bytes]:
        seen.inflated += 1
        return unzstd(packed, limit)

    def counted_inflate(*args: Any) -> bytes:
        data = inflate(*args)
        seen.kept += len(data)
        return data
    monkeypatch.setattr(shard_data, "_unzstd", counted_unzstd)
    monkeypatch.setattr(pipeline_scanning, "inflate", counted_inflate)
    validate = LogShard.model_validate.__func__  # type: ignore[attr-defined]

    def counted_validate(cls: type[LogShard], obj: Any, **kw: Any) -> LogShard:
        seen.validated += 1
        return validate(cls, obj, **kw)  # type: ignore[no-any-return]
    monkeypatch.setattr(LogShard, "model_validate", classmethod(counted_validate))
    return seen


# -- validated once, inflated by the edge's check and by the worker -----------------------------------------------
def test_a_shard_through_http_the_task_and_the_worker_is_validated_once_and_inflated_where_checked_and_scanned(
        rig: Rig, counts: Counts) -> None:
    """The JSON is validated once, at the edge. Its data is inflated twice: by the edge's check (that it inflates
    within the bound and is valid, which only inflating it tells: a zstd frame's content size and gzip's length
    trailer are the sender's claims), streamed and let go, and by the worker that scans it. The payload kept in
    between is the producer's compressed bytes."""
    api = FastAPI()
    api.include_router(ingest_router(rig.dispatcher, None))
    rig.pipeline.accept_job(failed_job("j1"))
    shard = zstd_shard("j1")
    body = shard.model_dump_json()
    with serving(api) as url:
        assert httpx.post(f"{url}/v1/shards", content=body, timeout=30).status_code == 202
    [(name, args, _)] = rig.app.sent
    assert name == "firstfault.match_shard" and args == (ShardRef("j1", "dmesg", None, "node004",
                                                                  "node004/dmesg.log", 0).to_json(),)
    assert len(json.dumps(args)) < 200 < len(body)  # the task names the shard; the bytes stayed in the store
    assert (counts.inflated, counts.validated, counts.kept) == (1, 1, 0)
    [kept] = rig.store.payloads.payloads([ShardRef.from_json(args[0])])
    assert kept is not None and (kept.compression, kept.data) == ("zstd", base64.b64decode(shard.data))
    rig.run_sent()
    assert (counts.inflated, counts.validated, counts.kept) == (2, 1, len(LOG))
    assert rig.shards("j1") == [("node004/dmesg.log", 0)]
    [stored] = rig.store.job("j1").shards
    assert any(f["signature"] == "host.oom_killer" for f in stored.scanned["findings"])
    assert rig.payload_rows() == 0  # dropped with the shard's recording


def test_shards_through_the_consumer_go_as_one_task_of_refs_each_validated_once(rig: Rig, counts: Counts) -> None:
    rig.pipeline.accept_job(failed_job("j2"))
    records = [Record(DEFAULT_TOPICS.shards, 0, seq, b"j2", zstd_shard("j2", seq, eof=seq == 2).model_dump_json()
                      .encode(), {}) for seq in range(3)]
    source = ListSource(records)
    IngestLoop(source, rig.dispatcher, DeadLetterWriter(DlqProducer())).step(threading.Event())
    assert source.committed == {(DEFAULT_TOPICS.shards, 0): 3}
    [(name, (refs, traces), _)] = rig.app.sent
    assert name == "firstfault.match_shards" and [r["seq"] for r in refs] == [0, 1, 2] and len(traces) == 3
    assert rig.payload_rows() == 3
    assert (counts.inflated, counts.validated, counts.kept) == (3, 3, 0)
    rig.run_sent()
    assert (counts.inflated, counts.validated, counts.kept) == (6, 3, 3 * len(LOG))
    assert rig.shards("j2") == [("node004/dmesg.log", s) for s in range(3)]
    assert rig.payload_rows() == 0


# -- the consumer's commit and rewind ---------------------------------------------------------------------------------
@dataclass
class RewindingSource(ListSource):
    seeks: list[tuple[str, int, int]] = field(default_factory=list)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self.seeks.append((topic, partition, offset))


class DownOnce(MemoryPayloadStore):
    def __init__(self) -> None:
        super().__init__()
        self.down = 1

    def put_payloads(self, payloads: Any, now: datetime) -> None:
        if self.down:
            self.down -= 1
            raise TransportError("database: down")
        super().put_payloads(payloads, now)


@pytest.mark.parametrize("failing", ["store", "broker"])
def test_a_hand_off_the_store_or_broker_refuses_is_not_committed_and_its_redelivery_keeps_one_payload(
        failing: str) -> None:
    payloads = DownOnce() if failing == "store" else MemoryPayloadStore()
    app = FakeApp(fail=1 if failing == "broker" else 0)  # one send_task call: its publish retries are inside
    dispatcher = CeleryDispatcher(app, payloads, ManualClock(T0))  # type: ignore[arg-type]
    record = Record(DEFAULT_TOPICS.shards, 0, 41, b"j3", zstd_shard("j3").model_dump_json().encode(), {})
    source = RewindingSource([record])
    loop = IngestLoop(source, dispatcher, DeadLetterWriter(DlqProducer()), backoff=_no_wait())
    assert loop.step(threading.Event()).retried
    assert source.committed == {} and source.seeks == [(DEFAULT_TOPICS.shards, 0, 41)] and app.sent == []
    source.records = [record]  # the rewind redelivers it
    assert loop.step(threading.Event()).handed_on == 1
    assert source.committed == {(DEFAULT_TOPICS.shards, 0): 42} and len(app.sent) == 1
    ref = ShardRef.from_json(app.sent[0][1][0])
    [kept] = payloads.payloads([ref])
    assert kept is not None and kept.eof and shard_data.inflate(kept.compression, kept.data) == LOG


def _no_wait() -> Any:
    from schemas.retry import RetryPolicy
    return RetryPolicy(0.0, 0.0, None)


# -- redelivery, loss and dead letters ----------------------------------------------------------------------------
def test_a_redelivered_task_or_message_stores_nothing_new_and_leaves_no_payload(rig: Rig) -> None:
    rig.pipeline.accept_job(failed_job("j4"))
    rig.dispatcher.submit_shard(zstd_shard("j4"), {})
    task = rig.app.sent[0]
    rig.run_sent()
    tasks.match_shard.apply(args=task[1])  # the task again (a worker died before acknowledging it)
    rig.dispatcher.submit_shard(zstd_shard("j4"), {})  # the message again (the consumer died before its commit)
    assert rig.payload_rows() == 1
    rig.run_sent()
    assert rig.shards("j4") == [("node004/dmesg.log", 0)]
    assert rig.payload_rows() == 0 and listed(rig.store) == []


def test_a_ref_whose_payload_never_arrived_is_a_dead_letter_naming_it(rig: Rig) -> None:
    ref = ShardRef("j5", "stdout", 3, None, "rank3.log", 7)
    tasks.match_shard.apply(args=(ref.to_json(),))
    [letter] = listed(rig.store)
    assert (letter.kind, letter.job_id, letter.where) == ("shard", "j5", "firstfault.match_shard")
    assert letter.payload == ref.to_json() and "payload is gone" in letter.reason


def _replayable(letter_payload: dict[str, Any]) -> bytes:
    """What `firstfault dlq replay` would send: a valid LogShard; the log bytes it carries."""
    return shard_data.decode_shard_data(LogShard.model_validate(letter_payload))


@pytest.mark.parametrize("failure", [InvalidMessage("refused"), RuntimeError("a bug")])
def test_a_task_failing_for_good_leaves_the_shard_itself_as_a_dead_letter_and_drops_its_payload(
        rig: Rig, monkeypatch: pytest.MonkeyPatch, failure: Exception) -> None:
    def broken(*_: object) -> object:
        raise failure
    monkeypatch.setattr(pipeline_service, "scan_arrival", broken)  # what the task scans each shard with
    text = b"plain text log line\n" * 50
    rig.dispatcher.submit_shards([zstd_shard("j6", 0, False), zstd_shard("j6", 1, True, data=text)], [{}, {}])
    rig.run_sent()
    letters = sorted(listed(rig.store), key=lambda x: x.payload["seq"])
    assert [(x.kind, x.where, x.payload["seq"]) for x in letters] == [("shard", "firstfault.match_shard", 0),
                                                                      ("shard", "firstfault.match_shard", 1)]
    assert [_replayable(x.payload) for x in letters] == [LOG, text]
    # the shards the producer sent, byte for byte: the payload kept their compressed data
    assert [x.payload for x in letters] == [zstd_shard("j6", 0, False).model_dump(mode="json"),
                                            zstd_shard("j6", 1, True, data=text).model_dump(mode="json")]
    assert letters[1].payload["eof"] is True and letters[1].payload["source"] == "node004/dmesg.log"
    assert str(failure) in letters[0].reason
    assert rig.payload_rows() == 0


def test_a_payload_inflating_past_the_bound_is_refused_by_the_worker_as_the_edge_refuses_it(rig: Rig) -> None:
    rig.pipeline.accept_job(failed_job("j9"))
    bomb = zstd_shard("j9", data=b"\0" * (shard_data.MAX_DECODED_BYTES + 1))
    with pytest.raises(InvalidMessage) as at_edge:
        shard_data.packed_shard_data(bomb)
    ref = ShardRef("j9", "dmesg", None, "node004", "node004/dmesg.log", 0)
    # stored past the edge's check (an edge with another bound, or a row written by hand)
    rig.store.payloads.put_payloads([ShardPayload(ref, True, "zstd", base64.b64decode(bomb.data))], T0)
    tasks.match_shard.apply(args=(ref.to_json(),))
    [letter] = listed(rig.store)
    assert at_edge.value.reason in letter.reason and letter.payload == bomb.model_dump(mode="json")
    assert rig.shards("j9") == [] and rig.payload_rows() == 0


def test_one_corrupt_payload_in_a_task_of_several_dead_letters_that_shard_alone_and_records_the_others(
        rig: Rig) -> None:
    rig.pipeline.accept_job(failed_job("j10"))
    text = b"plain text log line\n" * 50
    rig.dispatcher.submit_shards([zstd_shard("j10", 0, False), zstd_shard("j10", 1, False, data=text),
                                  zstd_shard("j10", 2, True, data=text)], [{}, {}, {}])
    # the middle one's stored bytes go bad after the edge checked them (a row damaged at rest)
    bad = ShardRef("j10", "dmesg", None, "node004", "node004/dmesg.log", 1)
    rig.store.payloads.drop_payloads([bad])
    rig.store.payloads.put_payloads([ShardPayload(bad, False, "zstd", b"not a zstd frame")], T0)
    rig.run_sent()
    assert rig.shards("j10") == [("node004/dmesg.log", 0), ("node004/dmesg.log", 2)]
    [letter] = listed(rig.store)
    assert (letter.kind, letter.where, letter.payload["seq"]) == ("shard", "firstfault.match_shard", 1)
    assert base64.b64decode(letter.payload["data"]) == b"not a zstd frame"  # the shard as stored, replayable
    assert letter.created_at.replace(tzinfo=UTC) == T0  # dated by the pipeline's clock, not the wall's
    assert rig.payload_rows() == 0


def test_a_whole_shard_task_queued_by_an_older_sender_still_runs(rig: Rig) -> None:
    shard = zstd_shard("j7")
    tasks.match_shard.apply(args=(shard.model_dump(mode="json"),))
    tasks.match_shards.apply(args=([zstd_shard("j7", 1).model_dump(mode="json")], [{}]))
    assert rig.shards("j7") == [("node004/dmesg.log", 0), ("node004/dmesg.log", 1)]


# -- the sweep ------------------------------------------------------------------------------------------------------
def test_a_payload_whose_task_was_lost_is_sent_again_once_per_grace(rig: Rig) -> None:
    rig.dispatcher.submit_shard(zstd_shard("j8"), {})
    rig.app.sent.clear()  # the broker lost it
    grace = timedelta(minutes=15)
    resend: Callable[..., None] = rig.dispatcher.resend
    assert resend_payloads(rig.store.payloads, resend, T0 + timedelta(minutes=10), grace) == []
    [again] = resend_payloads(rig.store.payloads, resend, T0 + timedelta(minutes=16), grace)
    assert resend_payloads(rig.store.payloads, resend, T0 + timedelta(minutes=20), grace) == []
    assert [args for _, args, _ in rig.app.sent] == [(again.to_json(),)]
    rig.run_sent()
    assert rig.shards("j8") == [("node004/dmesg.log", 0)] and rig.payload_rows() == 0
    assert resend_payloads(rig.store.payloads, resend, T0 + timedelta(hours=2), grace) == []
