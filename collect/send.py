"""Shipping a collector's sources: one shard sequence per source (the store keys a source by job, stream,
rank/host and name, so each file is numbered 0..n on its own), all of it before a deadline."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ingest.chunking import RAW_CHUNK, Note, StreamKey, envelopes, line_pieces, numbered
from ingest.ship import Shipped, Transport
from schemas.errors import FirstfaultError, UsageError
from schemas.wire import Compression, LogShard
from sources.files import Source, chunks


@dataclass(frozen=True)
class Item:
    """One source to send: a file read in chunks, or bytes the collector made (a decoded error file)."""

    key: StreamKey
    name: str  # the shard's `source`: what the incident's evidence cites
    path: Path | None = None
    data: bytes = b""
    whole: bool = False  # a Flight Recorder dump: the service parses a dump from one shard, so it is never cut


class OutOfTime(FirstfaultError):
    pass


def _blocks(item: Item) -> Iterable[bytes]:
    if item.path is None:
        return [item.data]
    return chunks(Source(item.name, os.fspath(item.path)))


def shards_of(job_id: str, item: Item, compression: Compression, note: Note) -> Iterator[LogShard]:
    if item.whole:
        data = b"".join(_blocks(item))
        pieces: Iterable[bytes] = [data] if data else []
        # envelopes halves what does not fit a 1 MiB message; a dump cut in two is no dump, so refuse it instead
        whole = list(e for piece in pieces for e in envelopes(job_id, item.key, item.name, piece, compression, note))
        if len(whole) > 1:
            raise ValueError(f"{item.name}: {len(data):,} bytes do not fit one 1 MiB shard compressed")
        return numbered(whole, job_id, item.key, item.name)
    unnumbered = (e for piece in line_pieces(_blocks(item), RAW_CHUNK, note, item.name)
                  for e in envelopes(job_id, item.key, item.name, piece, compression, note))
    return numbered(unnumbered, job_id, item.key, item.name)


def send_all(transport: Transport, job_id: str, items: Iterable[Item], note: Note, deadline: float | None = None,
             compression: Compression = "zstd") -> Shipped:
    """Send every item (a source that cannot be read or cut is skipped and noted); OutOfTime past `deadline`
    (time.monotonic()), checked between shards, so a slow service costs at most one shard's send past it."""
    sent = Shipped()
    for item in items:
        try:
            for shard in shards_of(job_id, item, compression, note):
                if deadline is not None and time.monotonic() > deadline:
                    raise OutOfTime(f"out of time after {sent.shards} shard(s) of {sent.streams + 1} source(s)")
                transport.send_shard(shard)
                sent.shards += 1
        except (OSError, ValueError, UsageError) as exc:  # this source only: a transport failure goes up
            sent.skipped.append(f"{item.name}: {exc}")
            note(f"skipped {item.name}: {exc}")
            continue
        sent.streams += 1
    return sent
