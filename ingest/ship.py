"""`firstfault ship`: a job's logs as LogShards and its JobEvent, to Kafka or to the HTTP ingest.

A directory is one stream per file, with rank and host read from the path as `diagnose` reads them
(node017/rank3.log); files that share (stream, rank, host) form one sequence, numbered on across files, so the
downstream key (job_id, stream, rank/host, seq) never collides. Ship one (job, stream, rank/host) once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

import httpx

from correlator.speakers import stream_from_path, who_from_path
from ingest.chunking import RAW_CHUNK, Note, StreamKey, envelopes, line_pieces, numbered
from ingest.kafka import WireProducer
from ingest.topics import DEFAULT_TOPICS, Topics
from schemas.errors import PermanentError, RetryableError, TransportError
from schemas.retry import SHIP
from schemas.wire import Compression, JobEvent, LogShard, Stream
from sources.files import Source, chunks, expand


class Transport(Protocol):
    def send_job(self, event: JobEvent) -> None: ...

    def send_shard(self, shard: LogShard) -> None: ...

    def close(self) -> None:
        """Returns once everything sent is durably accepted; raises TransportError otherwise."""

    def abandon(self) -> None:
        """After a failure: release the connection (a producer's thread) without waiting for what is queued."""


@dataclass(frozen=True)
class Overrides:
    """What the command line says about every file, winning over what the path says."""

    rank: int | None = None
    host: str | None = None
    stream: Stream | None = None


def stream_key(source: Source, given: Overrides) -> StreamKey:
    who = who_from_path(source.name) if source.path is not None else None
    stream = given.stream or (stream_from_path(source.name) if source.path is not None else "stdout")
    return StreamKey(stream=stream,  # type: ignore[arg-type]  # stream_from_path returns a Stream name
                     rank=given.rank if given.rank is not None else (who.rank if who else None),
                     host=given.host or (who.host if who else None))


def plan(paths: list[str], given: Overrides) -> dict[StreamKey, list[Source]]:
    """Every file to ship, grouped by the sequence its shards belong to, in a stable order."""
    groups: dict[StreamKey, list[Source]] = {}
    for source in expand(paths):
        groups.setdefault(stream_key(source, given), []).append(source)
    return groups


def stream_shards(job_id: str, key: StreamKey, sources: list[Source], compression: Compression, note: Note,
                  raw_chunk: int = RAW_CHUNK) -> Iterator[LogShard]:
    def unnumbered() -> Iterator[LogShard]:
        for source in sources:
            name = source.name if source.path is not None else None
            for piece in line_pieces(chunks(source), raw_chunk, note, source.name):
                yield from envelopes(job_id, key, name, piece, compression, note)

    first = sources[0].name if sources and sources[0].path is not None else None
    return numbered(unnumbered(), job_id, key, first)


@dataclass
class Shipped:
    """What was sent: `firstfault ship`'s streams, a collector's sources (collect/send.py)."""

    shards: int = 0
    streams: int = 0  # shard sequences: ship's (stream, rank/host) of files; a collector's sources, one each
    file_bytes: int = 0
    sent_bytes: int = 0
    skipped: list[str] = field(default_factory=list)  # a collector's source not sent, and why

    def summary(self, job_id: str) -> str:
        return (f"shipped {self.shards} shard(s) in {self.streams} stream(s) for job {job_id}: "
                f"{self.file_bytes:,} file bytes as {self.sent_bytes:,} message bytes")


def ship_logs(transport: Transport, job_id: str, paths: list[str], given: Overrides, compression: Compression,
              note: Note) -> Shipped:
    """Every stream's shards, in order. A transport failure says what was delivered and what was not: the stream
    it stopped in from which shard on, and the streams after it (ship those again: the service keeps a shard
    once, on (job, stream, rank/host, seq))."""
    shipped = Shipped()
    streams = list(plan(paths, given).items())
    for index, (key, sources) in enumerate(streams):
        shipped.streams += 1
        seq = 0
        try:
            for shard in stream_shards(job_id, key, sources, compression, note):
                seq = shard.seq
                transport.send_shard(shard)
                shipped.shards += 1
                shipped.sent_bytes += len(shard.model_dump_json())
        except (TransportError, PermanentError) as exc:
            # a Kafka producer left open keeps a thread retrying its queue in a process that goes on
            transport.abandon()
            left = [s.name for _, group in streams[index + 1:] for s in group]
            where = ", ".join(s.name for s in sources)
            raise type(exc)(f"{exc}; delivered {shipped.shards} shard(s) of {index} whole stream(s) before it; "
                            f"not delivered: {where} from shard {seq} on"
                            + (f", and {len(left)} more file(s) ({', '.join(left[:5])}"
                               f"{', ...' if len(left) > 5 else ''})" if left else "")) from exc
        shipped.file_bytes += sum(s.length() for s in sources)
    transport.close()
    return shipped


class KafkaTransport:
    def __init__(self, bootstrap: str, topics: Topics = DEFAULT_TOPICS) -> None:
        self._producer = WireProducer(bootstrap)
        self._topics = topics

    def send_job(self, event: JobEvent) -> None:
        self._producer.send_job(event, self._topics)

    def send_shard(self, shard: LogShard) -> None:
        self._producer.send_shard(shard, self._topics)

    def close(self) -> None:
        try:
            self._producer.flush()
        finally:
            self._producer.close()

    def abandon(self) -> None:
        self._producer.close(timeout_s=0)


class HttpTransport:
    """POST {url}/v1/jobs and {url}/v1/shards, 202 expected; transient failures (connection, 429, 5xx) are retried
    with backoff, then raised as TransportError; any other refusal is a PermanentError with the server's words."""

    def __init__(self, url: str, token: str | None = None, attempts: int = 4, timeout_s: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s)
        self._policy = replace(SHIP, max_attempts=attempts)

    def send_job(self, event: JobEvent) -> None:
        self._post("/v1/jobs", event.model_dump_json())

    def send_shard(self, shard: LogShard) -> None:
        self._post("/v1/shards", shard.model_dump_json())

    def close(self) -> None:
        self._client.close()

    def abandon(self) -> None:
        self._client.close()

    def _post(self, path: str, body: str) -> None:
        failed = 0
        while True:
            try:
                self._post_once(path, body)
                return
            except RetryableError as exc:
                failed += 1
                if self._policy.exhausted(failed):
                    raise
                time.sleep(max(self._policy.delay(failed - 1), exc.retry_after or 0.0))

    def _post_once(self, path: str, body: str) -> None:
        try:
            response = self._client.post(path, content=body, headers={"Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            raise TransportError(f"POST {self._client.base_url}{path}: {exc}") from exc
        if response.is_success:
            return
        detail = f"POST {self._client.base_url}{path}: HTTP {response.status_code}: {response.text[:200]}"
        if response.status_code == 429 or response.status_code >= 500:
            raise TransportError(detail, retry_after=_retry_after(response))
        raise PermanentError(detail)


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
