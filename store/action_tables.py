"""Tables of what people did to incidents from Slack (issue 26): each action with who and when, the mutes of a
signature on a cluster, and the Slack request signatures already seen (a replayed request is refused)."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel


class IncidentActionRow(SQLModel, table=True):
    """One action on an incident: acknowledge, resolve, mute, not_the_cause. A ``not_the_cause`` row is a labelled
    example: the diagnosed rank and signature, and the rank the person says failed first."""

    __tablename__ = "incident_actions"

    id: int | None = Field(default=None, primary_key=True)
    incident_id: str = Field(index=True, max_length=64)
    action: str = Field(max_length=32)
    actor: str = Field(max_length=256)  # "slack:U123 (name)"
    note: str = Field(default="", max_length=2000)
    diagnosed_rank: int | None = None
    diagnosed_signature: str | None = Field(default=None, max_length=256)
    correct_rank: int | None = None
    mute_until: datetime | None = None
    at: datetime


class SignatureMuteRow(SQLModel, table=True):
    """No delivery for incidents whose root cause is ``signature`` on ``cluster`` until ``until``."""

    __tablename__ = "signature_mutes"

    signature: str = Field(primary_key=True, max_length=256)
    cluster: str = Field(primary_key=True, max_length=256)  # "" for incidents without a cluster
    until: datetime
    actor: str = Field(max_length=256)
    at: datetime


class SeenSlackRequestRow(SQLModel, table=True):
    """A signed Slack request already handled; kept for the 5 minutes its timestamp stays acceptable."""

    __tablename__ = "slack_seen_requests"

    signature: str = Field(primary_key=True, max_length=128)
    seen_at: datetime = Field(index=True)
