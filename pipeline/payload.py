"""A shard's data as bytes: base64 + gzip/zstd decoded, with a bound so a decompression bomb is refused."""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import zlib

from schemas.errors import InvalidMessage
from schemas.wire import LogShard

MAX_DECODED = 16 << 20  # a shard is ≤ 1 MiB on the wire; 16 times is generous for log text, a bomb is far beyond


def shard_bytes(shard: LogShard) -> bytes:
    if shard.compression == "none":
        return shard.data.encode("utf-8", errors="surrogateescape")
    try:
        packed = base64.b64decode(shard.data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidMessage(f"shard data is not valid base64 for compression {shard.compression}: {exc}") from exc
    try:
        if shard.compression == "gzip":
            with gzip.GzipFile(fileobj=io.BytesIO(packed)) as handle:
                data = handle.read(MAX_DECODED + 1)
        else:
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed)) as reader:
                data = reader.read(MAX_DECODED + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise InvalidMessage(f"shard data does not decompress as {shard.compression}: {exc}") from exc
    except Exception as exc:  # zstandard.ZstdError has no stable import path across versions
        raise InvalidMessage(f"shard data does not decompress as {shard.compression}: {exc}") from exc
    if len(data) > MAX_DECODED:
        raise InvalidMessage(f"shard decompresses to more than {MAX_DECODED >> 20} MiB: refused")
    return data
