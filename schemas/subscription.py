"""A subscription: which incidents a team wants, and where they go (Slack, PagerDuty, a webhook).

Matching rules (see notifiers/routing.py):
- *what* it is about — signatures, tags, categories — is a union: any listed value of any of them matches
  (``--tag nccl --signature 'xid.*'`` gets NCCL failures and Xids);
- *where* — clusters, hosts, severities, job labels — narrows: each one set must hold (any of its values; every
  label pair);
- a subscription with no criterion at all matches the incidents of its own team (``Incident.team``); a
  ``fallback`` subscription gets every incident no other subscription matched, whatever its criteria;
- only the root cause counts: its signature, tags, category and host. A signature seen only in the collateral
  never matches, so a subscription to ``pytorch.c10d.watchdog_timeout`` is not paged for the 511 survivors of a
  rank that died of something else.
"""

from __future__ import annotations

from datetime import datetime, time
from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.incident import Severity

TargetKind = Literal["slack", "pagerduty", "webhook"]


class Match(BaseModel):
    """What a subscription matches on. Signature ids and label values accept shell wildcards (``nccl.*``)."""

    model_config = ConfigDict(extra="forbid")

    tags: list[str] = Field(default_factory=list)
    signatures: list[str] = Field(default_factory=list, description="catalog ids, wildcards allowed: nccl.*")
    categories: list[str] = Field(default_factory=list)
    clusters: list[str] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list, description="the initiating host; wildcards allowed")
    severities: list[Severity] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict, description="job labels; every pair must match")

    def is_empty(self) -> bool:
        return not (self.tags or self.signatures or self.categories or self.clusters or self.hosts
                    or self.severities or self.labels)


class Target(BaseModel):
    """One destination: a Slack channel (name or id), a PagerDuty routing key, or a webhook URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: TargetKind
    address: str = Field(min_length=1, max_length=1000)  # fits the outbox column

    @model_validator(mode="after")
    def _check_address(self) -> Target:
        if self.kind == "webhook" and not self.address.startswith(("http://", "https://")):
            raise ValueError(f"webhook target must be an http(s) URL, got {self.address!r}")
        if self.kind == "pagerduty" and not (len(self.address) == 32 and self.address.isascii()
                                             and self.address.isalnum()):
            raise ValueError("pagerduty target must be an Events API v2 integration key (32 letters and digits)")
        return self

    @property
    def key(self) -> str:
        """Stable identity of a destination: two subscriptions naming the same channel share one post."""
        return f"{self.kind}:{self.address}"

    def describe(self) -> str:
        """The destination as it may be shown anywhere (CLI, API, logs): ``kind:`` and the shown address."""
        return f"{self.kind}:{self.shown_address()}"

    def shown_address(self) -> str:
        """A PagerDuty routing key by its last 4 characters; a webhook URL without its credentials (user:password,
        and the path that often is the secret, as in a Slack incoming webhook) but scheme, host and the last 4
        characters of the rest; a Slack channel as it is."""
        if self.kind == "pagerduty":
            return f"…{self.address[-4:]}"
        if self.kind == "webhook":
            url = urlsplit(self.address)
            rest = self.address[len(f"{url.scheme}://{url.netloc}"):]
            host = url.netloc.rpartition("@")[2]
            return f"{url.scheme}://{host}" + (f"/…{rest[-4:]}" if rest.strip("/") else "")
        return self.address


class QuietHours(BaseModel):
    """A daily window (local time in ``timezone``) during which pages are held; may wrap midnight."""

    model_config = ConfigDict(extra="forbid")

    start: time
    end: time
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value


class Subscription(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    team: str
    name: str = ""
    match: Match = Field(default_factory=Match)
    targets: list[Target] = Field(min_length=1)
    fallback: bool = Field(default=False, description="receives only incidents no other subscription matched")
    mute_until: datetime | None = None
    quiet_hours: QuietHours | None = None
    created_at: datetime | None = None

    @field_validator("mute_until")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("mute_until needs a time zone (e.g. 2026-12-01T18:00:00Z)")
        return value
