"""Structured files among the logs, recognised by content: Flight Recorder dumps and the job's metadata.

A directory handed to `firstfault diagnose` may hold the scheduler's JobEvent (``job.json``: exit codes by rank
or host, the rank -> host map) next to the logs; it is used exactly as the same metadata from Kafka would be.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from correlator.flight_recorder import MAX_DUMP_BYTES, FlightDump, looks_like_dump, parse_dump
from schemas.wire import JobEvent

Structured = FlightDump | JobEvent
_SNIFF = 1 << 16
MAX_JOB_BYTES = 16 << 20


def looks_like_job(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{" and b'"job_id"' in head[:_SNIFF] and b'"state"' in head[:_SNIFF]


def parse_job(data: bytes) -> JobEvent | None:
    """A JobEvent (the firstfault.jobs contract of docs/contracts.md) or None when the bytes are something else."""
    if len(data) > MAX_JOB_BYTES or not looks_like_job(data[:_SNIFF]):
        return None
    try:
        return JobEvent.model_validate(json.loads(data))
    except (ValueError, ValidationError, RecursionError):
        return None


class Sniffer:
    """Fed a source's chunks alongside the line scanner; keeps the bytes only when the first chunk is a dump
    or a job's metadata."""

    def __init__(self, source: str, rank: int | None) -> None:
        self._source = source
        self._rank = rank
        self._parts: list[bytes] = []
        self._size = 0
        self._kind: str | None = None  # "dump" | "job" | "" (neither), decided on the first chunk

    def feed(self, chunk: bytes) -> None:
        if self._kind is None:
            head = chunk[:_SNIFF]
            self._kind = "dump" if looks_like_dump(head) else "job" if looks_like_job(head) else ""
        if self._kind:
            self._size += len(chunk)
            if self._size <= MAX_DUMP_BYTES:
                self._parts.append(chunk)

    def finish(self) -> Structured | None:
        if not self._kind or self._size > MAX_DUMP_BYTES:
            return None
        data = b"".join(self._parts)
        if self._kind == "dump":
            return parse_dump(data, self._source, self._rank)
        return parse_job(data)
