"""Bytes a shard's Celery task puts on the broker: the whole LogShard as an argument (what tasks carried before
issue 24, item 5) against the ShardRef they carry now, for the shards `firstfault ship` cuts from one rank's log.

    python -m bench.task_bytes [--rank-mb 12] [--redis redis://127.0.0.1:6379/9]

The rank's log comes from bench.generate (realistic training lines, 8 ranks); ship's own chunking cuts it
(ingest.ship.stream_shards: 4 MiB of raw log a shard, zstd). Each shard's task is published both ways to a queue of
this run's own on Redis (no worker), and what Redis holds is read back: the length of each message as stored
(kombu's JSON envelope with the body base64-encoded, headers and properties included). Also printed: the payload
the edge keeps in the store instead (the decoded bytes) and the wire message's size.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import uuid
from pathlib import Path

import redis

from bench.generate import generate, parse_size
from config.settings import Settings
from ingest.ship import Overrides, plan, stream_shards
from sources.shard_data import decode_shard_data
from store.testing import MemoryPayloadStore
from workers.app import make_app
from workers.dispatch import CeleryDispatcher


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.task_bytes", description=__doc__.split("\n\n")[0])
    p.add_argument("--rank-mb", type=float, default=12.0, help="size of the rank's log, MB")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/9")
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
    raw = [len(decode_shard_data(s)) for s in shards]
    print(f"{len(shards)} shards of one {args.rank_mb:g} MB rank log (ship: zstd, <= 4 MiB raw a shard)")
    for name, values in (("wire message (LogShard JSON)", wire), ("task on Redis, whole shard", before),
                         ("task on Redis, ShardRef", after), ("payload kept in the store (decoded)", raw)):
        print(f"  {name:<38} median {statistics.median(values):>11,.0f} B   max {max(values):>11,} B")
    return 0


def _published(client: redis.Redis, prefix: str, send: object) -> int:
    """The bytes Redis holds for the one message `send` publishes (the queue is emptied after)."""
    send()  # type: ignore[operator]
    [key] = [k for k in client.scan_iter(match=f"{prefix}*") if client.type(k) == b"list"]
    [message] = client.lrange(key, 0, -1)
    client.delete(key)
    return len(message)


if __name__ == "__main__":
    raise SystemExit(main())
