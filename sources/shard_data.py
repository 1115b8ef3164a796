"""A LogShard's data as log bytes: UTF-8 text as is, else base64 of gzip or zstd, bounded so that a decompression
bomb is refused. Below both ingest (which refuses undecodable shards where the sender hears of it) and the
pipeline (which scans what a shard carries).

Two steps, so that the edge can keep what the producer sent and a worker inflate it later under the same bound:
`packed_shard_data` undoes the base64 and checks that the data inflates within the bound (streaming, keeping
nothing it inflates), `inflate` turns packed bytes into the log bytes. `decode_shard_data` is both at once."""

from __future__ import annotations

import base64
import binascii
import io
import zlib
from collections.abc import Iterator

import zstandard

from schemas.errors import InvalidMessage
from schemas.wire import Compression, LogShard
from sources.zstdfile import unended_frame

MAX_DECODED_BYTES = 16 << 20  # a shard inflating past this is a decompression bomb, not a log
_BLOCK = 1 << 20  # inflated a block at a time: the bound is checked before the next block is made


def decode_shard_data(shard: LogShard, limit: int = MAX_DECODED_BYTES) -> bytes:
    """The log bytes a shard carries: UTF-8 text as is, else base64 then gzip or zstd, never more than `limit`."""
    return inflate(shard.compression, _unbase64(shard), limit)


def packed_shard_data(shard: LogShard, limit: int = MAX_DECODED_BYTES) -> bytes:
    """The shard's data as its producer packed it (the compressed bytes, base64 undone; UTF-8 text for
    compression none), once checked to inflate to at most `limit` bytes: the same InvalidMessage as
    decode_shard_data when it does not. What it inflates is counted and let go, not kept."""
    packed = _unbase64(shard)
    for _ in _blocks(shard.compression, packed, limit):
        pass
    return packed


def inflate(compression: Compression, packed: bytes, limit: int = MAX_DECODED_BYTES) -> bytes:
    """Packed bytes (packed_shard_data's) back to the log bytes, under the same bound and with the same errors."""
    return b"".join(_blocks(compression, packed, limit))


def wire_data(compression: Compression, packed: bytes) -> str:
    """A LogShard's `data` for packed bytes again: what the producer sent (UTF-8 text for none, else base64)."""
    if compression == "none":
        return packed.decode("utf-8")
    return base64.b64encode(packed).decode("ascii")


def _unbase64(shard: LogShard) -> bytes:
    if shard.compression == "none":
        return shard.data.encode("utf-8")
    try:
        return base64.b64decode(shard.data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidMessage(f"data is not valid base64 (compression {shard.compression}): {exc}") from None


def _blocks(compression: Compression, packed: bytes, limit: int) -> Iterator[bytes]:
    """The log bytes a block at a time; InvalidMessage once they pass `limit`, or when the data is not valid."""
    if compression == "none":
        if len(packed) > limit:
            raise InvalidMessage(f"shard data is {len(packed):,} bytes, over the {limit:,}-byte limit")
        yield packed
    elif compression == "gzip":
        yield from _gunzip(packed, limit)
    elif compression == "zstd":
        yield from _unzstd(packed, limit)
    else:  # a stored payload's column holds a value no LogShard allows
        raise InvalidMessage(f"unknown compression {compression!r}")


def _bomb(limit: int) -> InvalidMessage:
    return InvalidMessage(f"compressed data inflates past {limit:,} bytes (decompression bomb?)")


def _gunzip(packed: bytes, limit: int) -> Iterator[bytes]:
    size = 0
    rest = packed
    while rest:  # a gzip stream may hold several members, as `cat a.gz b.gz` makes
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        pending = rest
        while True:
            try:
                block = inflater.decompress(pending, min(_BLOCK, limit + 1 - size))
            except zlib.error as exc:
                raise InvalidMessage(f"data is not valid gzip: {exc}") from None
            size += len(block)
            if size > limit:
                raise _bomb(limit)
            if block:
                yield block
            pending = inflater.unconsumed_tail
            # a full block may leave output inside zlib with no input left: ask again until it gives nothing
            if inflater.eof or not (pending or block):
                break
        if not inflater.eof:
            raise InvalidMessage("gzip data is truncated")
        rest = inflater.unused_data


def _unzstd(packed: bytes, limit: int) -> Iterator[bytes]:
    # A streaming read bounds the output; a cut frame, which it reads as a short shard, is found by walking the
    # frame and block headers (sources/zstdfile.py), not by decoding the shard a second time.
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(packed, read_across_frames=True)
        size = 0
        while block := reader.read(_BLOCK):
            size += len(block)
            if size > limit:
                raise _bomb(limit)
            yield block
    except zstandard.ZstdError as exc:
        raise InvalidMessage(f"data is not valid zstd: {exc}") from None
    if unended_frame(io.BytesIO(packed)) is not None:
        raise InvalidMessage("zstd data is truncated")
