"""One suite for every PayloadStore (store/ports.py): the in-memory one, SQLite, and PostgreSQL (integration).

What the edge (storing a validated shard's packed bytes and their compression), the worker (loading them by a
task's ShardRef) and the sweep (re-sending a payload whose task was lost) rely on, asserted the same way against
each.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from schemas.wire import Compression
from store.ports import PayloadStore, ShardPayload, ShardRef
from tests.store.backends import sql_store

NOW = datetime(2026, 12, 4, 14, 0, tzinfo=UTC)
BINARY = bytes(range(256)) * 3 + b"\x00 not UTF-8 \xff\n"  # what compressed data looks like


def ref(job: str = "j1", seq: int = 0, rank: int | None = 3, host: str | None = "node001",
        source: str | None = "node001/rank3.log", stream: str = "stderr") -> ShardRef:
    return ShardRef(job, stream, rank, host, source, seq)


def payload(r: ShardRef, data: bytes = b"line\n", eof: bool = False, compression: Compression = "none") -> ShardPayload:
    return ShardPayload(r, eof, compression, data)


@dataclass
class Case:
    store: PayloadStore
    record: Callable[[Sequence[ShardRef]], None]  # what recording the shards does (the worker's scan)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    from store.testing import MemoryPayloadStore

    if request.param == "memory":
        memory = MemoryPayloadStore()
        yield Case(memory, memory.record)
        return
    opened = sql_store(request)

    def record(refs: Sequence[ShardRef]) -> None:
        scanned = {"lines": 1, "bytes": 5, "findings": [], "context": []}
        for r in refs:
            opened.record_shard(r.job_id, r.source_key, r.seq, False, scanned, NOW, drop_payload=True)
    yield Case(opened.payloads, record)
    opened.close()


def test_a_payload_comes_back_byte_for_byte_with_its_ref_eof_and_compression(case: Case) -> None:
    a, b, c, d = (ref(seq=0), ref(seq=1), ref(job="j2", rank=None, host="node009", source=None, stream="dmesg"),
                  ref(seq=2))
    sent = [payload(a, BINARY, compression="zstd"), payload(b, b"", eof=True), payload(c, b"oom-kill\n"),
            payload(d, BINARY[::-1], compression="gzip")]
    case.store.put_payloads(sent, NOW)
    found = case.store.payloads([c, ref(seq=7), a, d, b])
    assert found == [sent[2], None, sent[0], sent[3], sent[1]]


def test_refs_differ_by_source_rank_and_seq_but_a_redelivery_keeps_the_first(case: Case) -> None:
    case.store.put_payloads([payload(ref(seq=0), b"first\n")], NOW)
    case.store.put_payloads([payload(ref(seq=0), b"again\n"), payload(ref(seq=0, rank=4), b"rank 4\n"),
                             payload(ref(seq=0, source="other.log"), b"other\n")], NOW + timedelta(seconds=1))
    got = case.store.payloads([ref(seq=0), ref(seq=0, rank=4), ref(seq=0, source="other.log")])
    assert [p.data if p else None for p in got] == [b"first\n", b"rank 4\n", b"other\n"]


def test_dropped_payloads_are_gone_and_counted_once(case: Case) -> None:
    refs = [ref(seq=s) for s in range(3)]
    case.store.put_payloads([payload(r) for r in refs], NOW)
    assert case.store.drop_payloads(refs[:2]) == 2
    assert case.store.drop_payloads(refs[:2]) == 0
    assert case.store.payloads(refs) == [None, None, payload(refs[2])]
    assert case.store.scanned(refs) == [False, False, False]  # dropped is not scanned: nothing recorded them


def test_recording_a_shard_drops_its_payload_and_marks_it_scanned(case: Case) -> None:
    refs = [ref(seq=s) for s in range(3)]
    case.store.put_payloads([payload(r) for r in refs], NOW)
    case.record(refs[1:])
    assert case.store.payloads(refs) == [payload(refs[0]), None, None]
    assert case.store.scanned([*refs, ref(seq=9)]) == [False, True, True, False]


def test_reclaim_takes_the_oldest_unclaimed_once_until_it_is_old_again(case: Case) -> None:
    old, older, new = ref(seq=1), ref(seq=0), ref(seq=2)
    case.store.put_payloads([payload(older)], NOW - timedelta(minutes=30))
    case.store.put_payloads([payload(old)], NOW - timedelta(minutes=20))
    case.store.put_payloads([payload(new)], NOW)
    assert case.store.reclaim_payloads(NOW - timedelta(minutes=10), NOW, 1) == [older]
    assert case.store.reclaim_payloads(NOW - timedelta(minutes=10), NOW, 10) == [old]
    assert case.store.reclaim_payloads(NOW - timedelta(minutes=10), NOW, 10) == []  # both re-sent at NOW
    later = NOW + timedelta(minutes=11)
    assert case.store.reclaim_payloads(later - timedelta(minutes=10), later, 10) == [older, old, new]
    case.record([old])
    assert case.store.reclaim_payloads(later + timedelta(hours=1), later, 10) == [older, new]


def test_concurrent_edges_storing_one_shard_keep_one_payload(case: Case) -> None:
    errors: list[BaseException] = []

    def put(data: bytes) -> None:
        try:
            case.store.put_payloads([payload(ref(seq=5), data)], NOW)
        except BaseException as exc:
            errors.append(exc)
    threads = [threading.Thread(target=put, args=(f"copy {i}\n".encode(),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    [kept] = case.store.payloads([ref(seq=5)])
    assert kept is not None and kept.data.startswith(b"copy ")
    assert case.store.drop_payloads([ref(seq=5)]) == 1


def test_a_ref_survives_its_json_and_refuses_what_is_not_one() -> None:
    r = ref(rank=None, source=None)
    assert ShardRef.from_json(r.to_json()) == r
    for bad in ({**r.to_json(), "data": "x"}, {**r.to_json(), "seq": "1"}, {**r.to_json(), "rank": True}, [1],
                {k: v for k, v in r.to_json().items() if k != "seq"}):
        with pytest.raises(ValueError):
            ShardRef.from_json(bad)
