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


def _count() -> Any:
    return Field(default=0, sa_column=sa.Column(sa.Integer, nullable=False, server_default="0"))


class JobRow(SQLModel, table=True):
    __tablename__ = "jobs"

    job_id: str = Field(primary_key=True, max_length=256)
    attempt: int = 0
    state: str = Field(index=True)
    event: dict[str, Any] = _json()  # the JobEvents of its latest attempt, merged (schemas.wire.merged)
    cluster: str | None = Field(default=None, index=True)
    team: str | None = Field(default=None, index=True)
    failed_at: datetime | None = None  # when the failure event arrived (our clock): group_wait counts from here
    correlate_at: datetime | None = None  # the earliest correlation already scheduled
    created_at: datetime
    updated_at: datetime
    # what the job's sources add up to (store/progress.py keeps them as each shard is stored): deciding whether
    # a job may be complete reads these, not its shards
    world_size: int | None = None  # the event's, and its distinct hosts: what the counts are held against
    expected_hosts: int = _count()
    sources: int = _count()
    ended_sources: int = _count()
    ended_ranks: int = _count()
    # every stored shard and event adds one; a correlation notes the value it read, so a correlation with
    # nothing new to read (a spare timer, a redelivery) is skipped
    changes: int = _count()
    correlated: int = Field(default=-1, sa_column=sa.Column(sa.Integer, nullable=False, server_default="-1"))


class ShardRow(SQLModel, table=True):
    __tablename__ = "shards"
    __table_args__ = (sa.UniqueConstraint("job_id", "source_token", "seq", name="uq_shard"),)

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


class SourceRow(SQLModel, table=True):
    """One source of a job and what of it arrived: a row a source, updated as each of its shards is stored, so
    that whether the source (and the job) is complete is read without counting or reading shards."""

    __tablename__ = "job_sources"
    __table_args__ = (sa.Index("ix_job_sources_ended_rank", "job_id", "ended", "rank"),)

    job_id: str = Field(primary_key=True, max_length=256)
    source_token: str = Field(primary_key=True, max_length=1024)
    host_key: str = Field(primary_key=True)  # the host, "" for none (a key column is not null)
    stream: str
    rank: int | None = None
    host: str | None = None
    name: str = Field(max_length=1024)
    shards: int = 0  # distinct seqs stored (a shard's row is unique on its seq)
    max_seq: int = 0
    last_seq: int | None = None  # the eof shard's seq
    ended: bool = False
    complete: bool = False  # ended, and every seq 0..last_seq stored


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
    regressed_by: str | None = Field(default=None, sa_column=sa.Column(sa.String(64), nullable=True))
    created_at: datetime = Field(index=True)
    updated_at: datetime


class RevisionRow(SQLModel, table=True):
    __tablename__ = "incident_revisions"

    incident_id: str = Field(primary_key=True, foreign_key="incidents.id", max_length=64)
    revision: int = Field(primary_key=True)
    diagnosis: dict[str, Any] = _json()
    changes: list[str] = _json_list()
    created_at: datetime


class ShardPayloadRow(SQLModel, table=True):
    """A validated shard's data as its producer packed it (compressed, base64 undone) with its compression, from
    the edge's hand-off until its shard is recorded (which drops
    the row in the same transaction): what a task's ShardRef (store/ports.py) points to. Unique on the shard's
    own key, so a redelivered message keeps one row."""

    __tablename__ = "shard_payloads"
    __table_args__ = (sa.UniqueConstraint("job_id", "source_token", "seq", name="uq_shard_payload"),)

    id: int | None = Field(default=None, primary_key=True)
    job_id: str = Field(max_length=256)
    source_token: str = Field(max_length=1024)
    seq: int
    stream: str
    rank: int | None = None
    host: str | None = None
    source: str | None = Field(default=None, max_length=1024)
    eof: bool = False
    compression: str = Field(max_length=8)  # schemas.wire.Compression: none, gzip or zstd
    data: bytes = Field(sa_column=sa.Column(sa.LargeBinary, nullable=False))
    created_at: datetime
    sent_at: datetime = Field(index=True)  # when its task was last sent: a sweeper re-sends one long unclaimed
