"""Bytes a shard's Celery task puts on the broker: the whole LogShard as an argument (what tasks carried before
issue 24, item 5) against the ShardRef they carry now, for the shards `firstfault ship` cuts from one rank's log.

    python -m bench.task_bytes [--rank-mb 12] [--redis redis://127.0.0.1:6379/9] [--pg postgresql://...]

The rank's log comes from bench.generate (realistic training lines, 8 ranks); ship's own chunking cuts it
(ingest.ship.stream_shards: 4 MiB of raw log a shard, zstd). Each shard's task is published both ways to a queue of
this run's own on Redis (no worker), and what Redis holds is read back: the length of each message as stored
(kombu's JSON envelope with the body base64-encoded, headers and properties included). Also printed: the payload
the edge keeps in the store instead (the producer's compressed bytes), the log bytes they inflate to, and the wire
message's size. With --pg (an admin URL: a scratch database is created and dropped), what keeping the first
shard's payload costs PostgreSQL: the bytes it stores (pg_column_size, after TOAST's compression) and the time to
put and to get it, median of 5, for the compressed bytes (what the edge keeps) and, for comparison, the decoded
bytes (what the worker would load had the edge kept the log), with the time the worker spends inflating the
compressed ones (sources.shard_data.inflate, median of 5).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import redis

from bench.generate import generate, parse_size
from config.settings import Settings
from ingest.ship import Overrides, plan, stream_shards
from schemas.wire import LogShard
from sources.shard_data import decode_shard_data, inflate, packed_shard_data
from store.testing import MemoryPayloadStore
from workers.celery_app import make_app
from workers.dispatch import CeleryDispatcher


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.task_bytes", description=__doc__.split("\n\n")[0])
    p.add_argument("--rank-mb", type=float, default=12.0, help="size of the rank's log, MB")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    p.add_argument("--pg", default=None, help="PostgreSQL admin URL: also time the payload in the store")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), ranks=8, size=parse_size(f"{args.rank_mb * 8:g}MB"), seed=1)
        log = next(Path(tmp, "logs").rglob("rank3.log"))
        [(key, sources)] = plan([str(log)], Overrides()).items()
        shards = list(stream_shards("bench-job", key, sources, "zstd", lambda _: None))
    prefix = f"ffbytes-{uuid.uuid4().hex[:6]}-"
    app = make_app(Settings(broker_url=args.redis, broker_prefix=prefix, queue=f"{prefix}q"))
    client = redis.Redis.from_url(args.redis)
    try:
        before = [_published(client, prefix, lambda s=s: app.send_task(
            "firstfault.match_shard", (s.model_dump(mode="json"),))) for s in shards]
        dispatcher = CeleryDispatcher(app, MemoryPayloadStore())
        after = [_published(client, prefix, lambda s=s: dispatcher.submit_shard(s, {}))
                 for s in shards]
    finally:
        for key in client.scan_iter(match=f"{prefix}*"):
            client.delete(key)
        client.close()
    wire = [len(s.model_dump_json()) for s in shards]
    kept = [len(packed_shard_data(s)) for s in shards]
    raw = [len(decode_shard_data(s)) for s in shards]
    print(f"{len(shards)} shards of one {args.rank_mb:g} MB rank log (ship: zstd, <= 4 MiB raw a shard)")
    for name, values in (("wire message (LogShard JSON)", wire), ("task on Redis, whole shard", before),
                         ("task on Redis, ShardRef", after), ("payload kept in the store (compressed)", kept),
                         ("log bytes it inflates to", raw)):
        print(f"  {name:<38} median {statistics.median(values):>11,.0f} B   max {max(values):>11,} B")
    if args.pg:
        _in_postgres(args.pg, shards[0])
    return 0


def _in_postgres(admin: str, shard: LogShard) -> None:
    import psycopg
    import sqlalchemy as sa

    from store.incidents import Store
    from store.ports import ShardPayload, ShardRef

    name = f"ff_bytes_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    store = Store.open(f"{admin.rsplit('/', 1)[0]}/{name}")
    try:
        ref = ShardRef(shard.job_id, shard.stream, shard.rank, shard.host, shard.source, shard.seq)
        packed = packed_shard_data(shard)
        for kind, compression, data in (("compressed (kept)", shard.compression, packed),
                                        ("decoded (alternative)", "none", decode_shard_data(shard))):
            puts, gets, stored = [], [], 0
            for _ in range(5):
                start = time.perf_counter()
                store.payloads.put_payloads([ShardPayload(ref, shard.eof, compression, data)], datetime.now(UTC))
                puts.append(time.perf_counter() - start)
                start = time.perf_counter()
                store.payloads.payloads([ref])
                gets.append(time.perf_counter() - start)
                with store.engine.connect() as conn:
                    stored = conn.execute(sa.text("select pg_column_size(data) from shard_payloads")).scalar_one()
                store.payloads.drop_payloads([ref])
            print(f"  PostgreSQL, {kind:<25} {len(data):>11,} B stored as {stored:>11,} B   put "
                  f"{statistics.median(puts) * 1e3:5.1f} ms   get {statistics.median(gets) * 1e3:5.1f} ms")
        inflating = []
        for _ in range(5):
            start = time.perf_counter()
            inflate(shard.compression, packed)
            inflating.append(time.perf_counter() - start)
        print(f"  worker, inflating the compressed payload  {statistics.median(inflating) * 1e3:5.1f} ms")
    finally:
        store.close()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _published(client: redis.Redis, prefix: str, send: object) -> int:
    """The bytes Redis holds for the one message `send` publishes (the queue is emptied after)."""
    send()  # type: ignore[operator]
    [key] = [k for k in client.scan_iter(match=f"{prefix}*") if client.type(k) == b"list"]
    [message] = client.lrange(key, 0, -1)
    client.delete(key)
    return len(message)


if __name__ == "__main__":
    raise SystemExit(main())
