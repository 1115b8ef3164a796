"""Subscriptions in the store: add, remove, list; rows to and from ``schemas.subscription.Subscription``."""

from __future__ import annotations

import logging
import secrets
from datetime import UTC, datetime

from pydantic import ValidationError
from sqlmodel import Session, col, select

from schemas.subscription import Subscription
from store.notify_tables import SubscriptionRow

log = logging.getLogger("firstfault.notifiers")


def new_id() -> str:
    return f"sub-{secrets.token_hex(4)}"


def to_row(sub: Subscription, now: datetime) -> SubscriptionRow:
    return SubscriptionRow(
        id=sub.id, team=sub.team, name=sub.name, match=sub.match.model_dump(mode="json", exclude_defaults=True),
        targets=[t.model_dump(mode="json") for t in sub.targets], fallback=sub.fallback, mute_until=sub.mute_until,
        quiet_hours=sub.quiet_hours.model_dump(mode="json") if sub.quiet_hours else None,
        created_at=sub.created_at or now)


def from_row(row: SubscriptionRow) -> Subscription:
    return Subscription.model_validate({
        "id": row.id, "team": row.team, "name": row.name, "match": row.match, "targets": row.targets,
        "fallback": row.fallback, "mute_until": _aware(row.mute_until), "quiet_hours": row.quiet_hours,
        "created_at": _aware(row.created_at)})


def add(session: Session, sub: Subscription, now: datetime) -> Subscription:
    session.add(to_row(sub, now))
    session.flush()
    return sub


def remove(session: Session, subscription_id: str) -> bool:
    row = session.get(SubscriptionRow, subscription_id)
    if row is None:
        return False
    session.delete(row)
    return True


def all_subscriptions(session: Session) -> list[Subscription]:
    """Every valid subscription. A row that no longer validates (edited by hand, an older schema) is skipped
    with a warning: it must not stop incidents from being saved, since routing runs in their transaction."""
    rows = session.exec(select(SubscriptionRow).order_by(col(SubscriptionRow.team), col(SubscriptionRow.id))).all()
    out = []
    for row in rows:
        try:
            out.append(from_row(row))
        except ValidationError as exc:
            log.warning("subscription %s is invalid and ignored: %s", row.id, exc.errors()[0]["msg"])
    return out


def _aware(value: datetime | None) -> datetime | None:
    """SQLite hands datetimes back naive; everything stored is UTC."""
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value
