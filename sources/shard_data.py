"""A LogShard's data as log bytes: UTF-8 text as is, else base64 of gzip or zstd, bounded so that a decompression
bomb is refused. Below both ingest (which refuses undecodable shards where the sender hears of it) and the
pipeline (which scans what a shard carries)."""

from __future__ import annotations

import base64
import binascii
import io
import zlib

import zstandard

from schemas.errors import InvalidMessage
from schemas.wire import LogShard
from sources.zstdfile import unended_frame

MAX_DECODED_BYTES = 16 << 20  # a shard inflating past this is a decompression bomb, not a log


def decode_shard_data(shard: LogShard, limit: int = MAX_DECODED_BYTES) -> bytes:
    """The log bytes a shard carries: UTF-8 text as is, else base64 then gzip or zstd, never more than `limit`."""
    if shard.compression == "none":
        data = shard.data.encode("utf-8")
        if len(data) > limit:
            raise InvalidMessage(f"shard data is {len(data):,} bytes, over the {limit:,}-byte limit")
        return data
    try:
        packed = base64.b64decode(shard.data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidMessage(f"data is not valid base64 (compression {shard.compression}): {exc}") from None
    if shard.compression == "gzip":
        return _gunzip(packed, limit)
    return _unzstd(packed, limit)


def _bomb(limit: int) -> InvalidMessage:
    return InvalidMessage(f"compressed data inflates past {limit:,} bytes (decompression bomb?)")


def _gunzip(packed: bytes, limit: int) -> bytes:
    out: list[bytes] = []
    size = 0
    rest = packed
    while rest:  # a gzip stream may hold several members, as `cat a.gz b.gz` makes
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            block = inflater.decompress(rest, limit + 1 - size)
        except zlib.error as exc:
            raise InvalidMessage(f"data is not valid gzip: {exc}") from None
        size += len(block)
        if size > limit or inflater.unconsumed_tail:
            raise _bomb(limit)
        if not inflater.eof:
            raise InvalidMessage("gzip data is truncated")
        out.append(block)
        rest = inflater.unused_data
    return b"".join(out)


def _unzstd(packed: bytes, limit: int) -> bytes:
    # A streaming read bounds the output; a cut frame, which it reads as a short shard, is found by walking the
    # frame and block headers (sources/zstdfile.py), not by decoding the shard a second time.
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(packed, read_across_frames=True)
        out: list[bytes] = []
        size = 0
        while block := reader.read(1 << 20):
            size += len(block)
            if size > limit:
                raise _bomb(limit)
            out.append(block)
    except zstandard.ZstdError as exc:
        raise InvalidMessage(f"data is not valid zstd: {exc}") from None
    if unended_frame(io.BytesIO(packed)) is not None:
        raise InvalidMessage("zstd data is truncated")
    return b"".join(out)
