"""Fuzz target: a LogShard's data after validation, decompressed with its bound (sources/shard_data.py).

The first byte chooses the compression (gzip, zstd, none) and the bound (the real 16 MiB, or 4 KiB so that
bombs are met at fuzz sizes); the rest is the compressed bytes themselves, base64-encoded as a producer would.
The answer is the log bytes, never more than the bound, or InvalidMessage with a reason; never another exception.
"""

from __future__ import annotations

import base64

from schemas.errors import InvalidMessage
from schemas.wire import LogShard
from sources.shard_data import MAX_DECODED_BYTES, decode_shard_data

COMPRESSIONS = ("gzip", "zstd", "none")
SMALL_LIMIT = 4 << 10


def shard_of(data: bytes) -> tuple[LogShard, int]:
    """The shard and the bound an input stands for."""
    head, body = (data[0], data[1:]) if data else (0, b"")
    compression = COMPRESSIONS[head % 3]
    limit = SMALL_LIMIT if head & 0x80 else MAX_DECODED_BYTES
    text = body.decode("utf-8", "replace") if compression == "none" else base64.b64encode(body).decode()
    return LogShard(job_id="j", seq=0, compression=compression, data=text), limit


def check(data: bytes) -> None:
    shard, limit = shard_of(data)
    try:
        decoded = decode_shard_data(shard, limit)
    except InvalidMessage as exc:
        assert exc.reason, "InvalidMessage without a reason"
        return
    assert len(decoded) <= limit, f"{len(decoded):,} bytes decoded past the {limit:,}-byte bound"

