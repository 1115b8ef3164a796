"""Notification tables: subscriptions, the outbox (one row per incident revision and destination) and the
outcomes ledger (every attempt and every decision, for ``firstfault outcomes``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel


class SubscriptionRow(SQLModel, table=True):
    __tablename__ = "subscriptions"

    id: str = Field(primary_key=True, max_length=64)
    team: str = Field(index=True, max_length=256)
    name: str = ""
    match: dict[str, Any] = Field(default_factory=dict, sa_column=sa.Column(sa.JSON, nullable=False))
    targets: list[dict[str, Any]] = Field(default_factory=list, sa_column=sa.Column(sa.JSON, nullable=False))
    fallback: bool = False
    mute_until: datetime | None = None
    quiet_hours: dict[str, Any] | None = Field(default=None, sa_column=sa.Column(sa.JSON, nullable=True))
    created_at: datetime


class OutboxRow(SQLModel, table=True):
    """One delivery: an incident revision to one destination. ``status`` goes pending/held → sending →
    sent | failed, or is final from the start (muted, suppressed_collateral, deduplicated)."""

    __tablename__ = "notification_outbox"
    __table_args__ = (sa.Index("ix_outbox_due", "status", "next_attempt_at"),
                      sa.Index("ix_outbox_target", "incident_id", "target_kind", "target_address"))

    id: int | None = Field(default=None, primary_key=True)
    dedup_key: str = Field(unique=True, max_length=1024)  # incident:revision:state:kind:address
    incident_id: str = Field(index=True, max_length=64)
    revision: int
    incident_state: str
    subscription_id: str = Field(max_length=64)
    target_kind: str
    target_address: str = Field(max_length=1024)
    status: str
    reason: str = ""
    incident: dict[str, Any] = Field(default_factory=dict, sa_column=sa.Column(sa.JSON, nullable=False))
    attempts: int = 0
    rate_limited: bool = False  # a 429 or our pacing delayed it: "rate-limited then sent"
    maybe_sent: bool = False  # an attempt began and got no clear "not sent" answer: look before sending again
    next_attempt_at: datetime | None = None
    lease_until: datetime | None = None
    claim_id: str | None = Field(default=None, max_length=64)
    ref: str | None = Field(default=None, max_length=1024)  # Slack channel/ts, PagerDuty dedup key, delivery id
    created_at: datetime
    updated_at: datetime
    sent_at: datetime | None = None


class OutcomeRow(SQLModel, table=True):
    """The ledger: what happened to a delivery, step by step (decided, rate-limited, retried, sent, failed)."""

    __tablename__ = "notification_outcomes"

    id: int | None = Field(default=None, primary_key=True)
    outbox_id: int = Field(index=True, foreign_key="notification_outbox.id")
    incident_id: str = Field(index=True, max_length=64)
    outcome: str
    detail: str = ""
    at: datetime
