"""Cutting a log into LogShards: at newlines, compressed, each message at most 1 MiB including its JSON envelope.
Pure: bytes in, models out.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import zstandard

from schemas.wire import MAX_SHARD_BYTES, Compression, LogShard, Stream

RAW_CHUNK = 4 << 20  # raw log bytes per shard before compression; a shard whose envelope is too big is halved
_SEQ_MARGIN = 32  # the size check runs with seq=0, eof=false; a 12-digit seq and `true` still fit in this margin

Note = Callable[[str], None]


@dataclass(frozen=True)
class StreamKey:
    """What a shard sequence is numbered by: seq runs 0..n with eof on the last, per (job, stream, rank/host)."""

    stream: Stream
    rank: int | None
    host: str | None


def line_pieces(blocks: Iterable[bytes], limit: int, note: Note, name: str = "") -> Iterator[bytes]:
    """Re-cut arbitrary blocks into pieces of at most `limit` bytes that end at a newline. A line longer than
    `limit` is cut (and noted): the only place a piece ends mid-line."""
    buf = b""
    for block in blocks:
        buf += block
        while len(buf) > limit:
            cut = buf.rfind(b"\n", 0, limit)
            if cut < 0:
                note(f"{name}: a line longer than {limit:,} bytes was cut")
                yield buf[:limit]
                buf = buf[limit:]
            else:
                yield buf[:cut + 1]
                buf = buf[cut + 1:]
    if buf:
        yield buf


def pack(data: bytes, compression: Compression) -> tuple[Compression, str]:
    """A shard's (compression, data) for raw bytes. `none` keeps valid UTF-8 as text and zstd-compresses the rest,
    so binary junk in a log is never mangled."""
    if compression == "none":
        try:
            return "none", data.decode("utf-8")
        except UnicodeDecodeError:
            compression = "zstd"
    packed = zstandard.ZstdCompressor(level=3).compress(data) if compression == "zstd" else gzip.compress(data, 6)
    return compression, base64.b64encode(packed).decode("ascii")


def _split(data: bytes) -> tuple[bytes, bytes]:
    """Two halves, cut at the newline nearest the middle (or at the middle when there is none)."""
    middle = len(data) // 2
    before = data.rfind(b"\n", 0, middle)
    after = data.find(b"\n", middle)
    candidates = [i + 1 for i in (before, after) if 0 <= i < len(data) - 1]
    cut = min(candidates, key=lambda i: abs(i - middle)) if candidates else middle
    return data[:cut], data[cut:]


def envelopes(job_id: str, key: StreamKey, source: str | None, data: bytes, compression: Compression, note: Note,
              limit: int = MAX_SHARD_BYTES) -> Iterator[LogShard]:
    """Shards (seq 0, eof false: the caller numbers them) for one piece, halved until each message fits `limit`."""
    used, text = pack(data, compression)
    shard = LogShard(job_id=job_id, rank=key.rank, host=key.host, stream=key.stream, seq=0, compression=used,
                     data=text, source=source)
    if len(shard.model_dump_json().encode("utf-8")) + _SEQ_MARGIN <= limit:
        yield shard
        return
    if len(data) <= 1:
        raise ValueError(f"a shard envelope alone exceeds {limit} bytes")  # only with an absurd job_id/source
    first, second = _split(data)
    if not first.endswith(b"\n"):
        note(f"{source or '<stdin>'}: a line was cut to fit a {limit:,}-byte message")
    yield from envelopes(job_id, key, source, first, compression, note, limit)
    yield from envelopes(job_id, key, source, second, compression, note, limit)


def numbered(shards: Iterable[LogShard], job_id: str, key: StreamKey, source: str | None) -> Iterator[LogShard]:
    """seq 0..n in order, eof on the last; one empty eof shard when there is nothing, so the end is still known."""
    previous: LogShard | None = None
    for seq, shard in enumerate(shards):
        if previous is not None:
            yield previous
        previous = shard.model_copy(update={"seq": seq})
    if previous is None:
        previous = LogShard(job_id=job_id, rank=key.rank, host=key.host, stream=key.stream, seq=0, data="",
                            source=source)
    yield previous.model_copy(update={"eof": True})
