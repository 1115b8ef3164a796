"""One shard's bytes scanned into what the store keeps and what a correlation merges: the same function in the
Pipeline's own thread and in the embedded runner's scan processes (pipeline/scanpool.py).

Light on purpose: a scan process imports this module, the catalog and the correlator, not the store's SQL.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

from catalog.matcher import Matcher
from correlator.reading import SourceResult, SourceScanner
from correlator.shards import ScanJSON, SourceKey, base_who, source_key
from schemas.errors import PermanentError
from schemas.wire import LogShard
from sources.shard_data import decode_shard_data, inflate
from store.ports import ShardPayload


@dataclass(frozen=True)
class Arrival:
    """A shard to scan: its identity, and its log bytes (decoded when the scan asks). Picklable: a scan process
    gets the shard's data as it arrived (base64 or packed), and decodes it there."""

    job_id: str
    key: SourceKey
    seq: int
    eof: bool
    data: Callable[[], bytes]


class Scanned(NamedTuple):
    """A shard's scan: the result a correlation merges, its JSON the store keeps, and the seconds it took."""

    result: SourceResult
    stored: ScanJSON
    seconds: float


class Unreadable(NamedTuple):
    """A shard whose data does not decode: its dead letter, not a scan (a scan process sends the error's text as
    a plain PermanentError: a subclass's own arguments need not survive pickling)."""

    error: PermanentError


Outcome = Scanned | Unreadable


def arrival(shard: LogShard | ShardPayload) -> Arrival:
    if isinstance(shard, ShardPayload):
        r = shard.ref
        return Arrival(r.job_id, r.source_key, r.seq, shard.eof, partial(inflate, shard.compression, shard.data))
    return Arrival(shard.job_id, source_key(shard.stream, shard.rank, shard.host, shard.source), shard.seq,
                   shard.eof, partial(decode_shard_data, shard))


def scan(matcher: Matcher, key: SourceKey, data: bytes, year: int) -> SourceResult:
    scanner = SourceScanner(matcher, key.name, base_who(key), year, fold_context=True)
    scanner.feed(data)
    return scanner.finish()


def scan_arrival(matcher: Matcher, shard: Arrival, year: int) -> Outcome:
    started = time.perf_counter()
    try:
        data = shard.data()
    except PermanentError as exc:
        return Unreadable(exc)
    result = scan(matcher, shard.key, data, year)
    del data  # up to 16 MiB inflated: let it go before the JSON is built
    return Scanned(result, ScanJSON.of(result), time.perf_counter() - started)


def scan_arrivals(matcher: Matcher, shards: Sequence[Arrival], year: int) -> list[Outcome]:
    return [scan_arrival(matcher, shard, year) for shard in shards]
