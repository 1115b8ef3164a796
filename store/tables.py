"""The tables. Shards keep their scanned findings, not the raw log; incidents keep their evidence lines, so the
history never needs the logs again."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel


def _json() -> Any:
    return Field(default_factory=dict, sa_column=sa.Column(sa.JSON, nullable=False))


def _json_list() -> Any:
    return Field(default_factory=list, sa_column=sa.Column(sa.JSON, nullable=False))


class JobRow(SQLModel, table=True):
    __tablename__ = "jobs"

    job_id: str = Field(primary_key=True, max_length=256)
    attempt: int = 0
    state: str = Field(index=True)
    event: dict[str, Any] = _json()  # the latest JobEvent, as received
    cluster: str | None = Field(default=None, index=True)
    team: str | None = Field(default=None, index=True)
    failed_at: datetime | None = None  # when the failure event arrived (our clock): group_wait counts from here
    correlate_at: datetime | None = None  # the earliest correlation already scheduled
    created_at: datetime
    updated_at: datetime


class ShardRow(SQLModel, table=True):
    __tablename__ = "shards"
    __table_args__ = (
        sa.UniqueConstraint("job_id", "source_token", "seq", name="uq_shard"),
        # what Store.record_shard counts after every shard, read from the index alone: the rows themselves hold
        # the scanned findings, and reading them each time made a 1,024-rank job quadratic
        sa.Index("ix_shards_progress", "job_id", "eof", "source_token", "host", "rank"),
    )

    id: int | None = Field(default=None, primary_key=True)
    job_id: str = Field(index=True, max_length=256)
    source_token: str = Field(max_length=1024)  # stream|rank-or-host|name: the idempotency key with seq
    stream: str
    rank: int | None = None
    host: str | None = None
    name: str = Field(max_length=1024)
    seq: int
    eof: bool = False
    lines: int = 0
    bytes: int = 0
    scanned: dict[str, Any] = _json()  # findings and context records of this shard alone
    received_at: datetime


class IncidentRow(SQLModel, table=True):
    __tablename__ = "incidents"
    __table_args__ = (sa.UniqueConstraint("job_id", "attempt", name="uq_incident_job"),)

    id: str = Field(primary_key=True, max_length=64)
    job_id: str = Field(index=True, max_length=256)
    attempt: int = 0
    cluster: str | None = Field(default=None, index=True)
    team: str | None = Field(default=None, index=True)
    state: str = Field(default="open", index=True)
    revision: int = 1
    severity: str = "error"
    verdict: str
    signature: str | None = Field(default=None, index=True)
    category: str | None = None
    tags: list[str] = _json_list()
    rank: int | None = None
    host: str | None = Field(default=None, index=True)
    hosts: list[str] = _json_list()
    confidence: float | None = None
    labels: dict[str, str] = _json()
    diagnosis: dict[str, Any] = _json()
    changes: list[str] = _json_list()
    verification: dict[str, Any] | None = Field(default=None, sa_column=sa.Column(sa.JSON, nullable=True))
    repeats: int = Field(default=0, sa_column=sa.Column(sa.Integer, nullable=False, server_default="0"))
    regression_of: str | None = Field(default=None, sa_column=sa.Column(sa.String(64), nullable=True))
    created_at: datetime = Field(index=True)
    updated_at: datetime


class RevisionRow(SQLModel, table=True):
    __tablename__ = "incident_revisions"

    incident_id: str = Field(primary_key=True, foreign_key="incidents.id", max_length=64)
    revision: int = Field(primary_key=True)
    diagnosis: dict[str, Any] = _json()
    changes: list[str] = _json_list()
    created_at: datetime
