"""What every notifier is: one method to deliver an incident revision to one address, one to find a delivery
that may already have happened (recovery after a crash between sending and recording)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from schemas.errors import PermanentError, RetryableError
from schemas.incident import Incident
from schemas.subscription import TargetKind


@dataclass(frozen=True)
class Delivery:
    """What a destination answered: ``ref`` is what later deliveries need (Slack ``channel/ts`` of the root
    message, the PagerDuty dedup key, the webhook delivery id); ``detail`` is for the outcomes ledger."""

    ref: str
    detail: str = ""


class Rejected(PermanentError):
    """The destination refused the delivery for good (bad token, unknown channel, invalid payload)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class RateLimited(RetryableError):
    """The destination asked us to slow down (HTTP 429); ``retry_after`` is when to try again, in seconds."""


def retry_after_seconds(headers: Mapping[str, str], default: float | None = None) -> float | None:
    """The Retry-After header as seconds (the delay form; Slack and PagerDuty send seconds), else ``default``."""
    for name, value in headers.items():
        if name.lower() == "retry-after":
            try:
                return max(float(value), 0.0)
            except ValueError:
                return default
    return default


class Notifier(Protocol):
    kind: TargetKind

    def send(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery:
        """Deliver this revision. ``root_ref`` is the ref of this incident's first delivery to ``address``
        (None for the first). ``delivery_id`` is unique per (incident, revision, target); it travels with the
        message so that ``find_sent`` can recognise it. Raises RetryableError or PermanentError."""
        ...

    def find_sent(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery | None:
        """The delivery ``delivery_id`` if the destination already has it, else None (then it is sent again)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...
