"""Dead letters of the pipeline's own work: a task (record a job, match a shard, correlate) that failed for good
leaves a row here with its reason and what it was given, so nothing is dropped without a trace. The Kafka
consumer's rejected messages go to `firstfault.dlq` (ingest/dlq.py) and, when it has a store, here too.

`firstfault dlq list | show ID | replay ID` reads them (firstfault/dlq_cli.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel, col, select

from store.incidents import Store

MAX_REASON = 4000  # a traceback's last line and its context, not a whole log


class DeadLetterRow(SQLModel, table=True):
    __tablename__ = "dead_letters"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=32)  # job | shard | correlate | message (a raw Kafka message)
    job_id: str | None = Field(default=None, index=True, max_length=256)
    where: str = Field(max_length=256)  # the task or topic it failed in: firstfault.match_shard, firstfault.shards
    reason: str
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=sa.Column(sa.JSON, nullable=False))
    created_at: datetime = Field(index=True)
    replayed_at: datetime | None = None


def _job_id(payload: dict[str, Any]) -> str | None:
    value = payload.get("job_id")
    return value[:256] if isinstance(value, str) else None


def record(store: Store, kind: str, where: str, reason: str, payload: dict[str, Any], now: datetime) -> int:
    """Keep one dead letter, dated `now` by the caller's clock; its id. Raises TransportError when the store is
    unreachable."""
    row = DeadLetterRow(kind=kind, job_id=_job_id(payload), where=where[:256], reason=reason[:MAX_REASON],
                        payload=payload, created_at=now)
    with store.session() as s:
        s.add(row)
        s.flush()
        assert row.id is not None
        return row.id


def keep_message(store: Store, letter: Any) -> int:
    """A Kafka message the consumer dead-lettered (ingest.dlq.DeadLetter), kept here too: the topic stays the
    record of its original bytes, this row makes it listable."""
    dumped = letter.model_dump(mode="json")
    return record(store, "message", letter.topic, letter.reason, {"job_id": letter.key, **dumped}, letter.time)


def listed(store: Store, job_id: str | None = None, limit: int = 100) -> list[DeadLetterRow]:
    """The newest first."""
    with store.session() as s:
        query = select(DeadLetterRow).order_by(col(DeadLetterRow.id).desc()).limit(limit)
        if job_id is not None:
            query = query.where(DeadLetterRow.job_id == job_id)
        return list(s.exec(query).all())


def one(store: Store, letter_id: int) -> DeadLetterRow | None:
    with store.session() as s:
        return s.get(DeadLetterRow, letter_id)


def mark_replayed(store: Store, letter_id: int, now: datetime) -> None:
    with store.session() as s:
        row = s.get(DeadLetterRow, letter_id, with_for_update=True)
        if row is not None:
            row.replayed_at = now
            s.add(row)
