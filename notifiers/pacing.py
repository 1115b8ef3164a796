"""Per-channel pacing for Slack (about one message per second per channel, short bursts allowed). Pure: the
bucket is a value, time is an argument, and the answer is "send now" or "retry at T" — never a sleep."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Bucket:
    tokens: float
    at: datetime


@dataclass(frozen=True)
class Decision:
    send: bool
    retry_at: datetime | None = None  # when ``send`` is False: the earliest time a token is available


@dataclass
class Pacer:
    """Token buckets keyed by channel: ``rate`` tokens per second, at most ``burst`` saved up."""

    rate: float = 1.0
    burst: int = 3
    buckets: dict[str, Bucket] = field(default_factory=dict)

    def take(self, channel: str, now: datetime) -> Decision:
        bucket, decision = take(self.buckets.get(channel), now, self.rate, self.burst)
        self.buckets[channel] = bucket
        return decision

    def hold(self, channel: str, until: datetime) -> None:
        """Slack said 429 with Retry-After: no token for this channel before ``until``."""
        self.buckets[channel] = Bucket(tokens=1.0, at=until)  # the one token Slack will accept then


def take(bucket: Bucket | None, now: datetime, rate: float, burst: int) -> tuple[Bucket, Decision]:
    """Refill ``bucket`` up to ``now`` and take one token if there is one."""
    if bucket is None:
        bucket = Bucket(tokens=float(burst), at=now)
    elapsed = max((now - bucket.at).total_seconds(), 0.0)
    tokens = min(float(burst), bucket.tokens + elapsed * rate) if now >= bucket.at else bucket.tokens
    at = max(now, bucket.at)
    if tokens >= 1.0 and now >= bucket.at:
        return Bucket(tokens - 1.0, at), Decision(send=True)
    wait = (1.0 - tokens) / rate
    return Bucket(tokens, at), Decision(send=False, retry_at=at + timedelta(seconds=wait))
