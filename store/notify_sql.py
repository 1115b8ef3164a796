"""The notification store port (store/ports.py) over SQLModel: subscriptions, the outbox and its ledger in the
tables of store/notify_tables.py, on SQLite or PostgreSQL."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from pydantic import ValidationError
from sqlmodel import Session, col, func, or_, select

from schemas.subscription import Subscription
from store.action_tables import SignatureMuteRow
from store.notify_tables import OutboxRow, OutcomeRow, SubscriptionRow
from store.ports import DELIVERABLE, SENDING, NotStorable, OutboxEntry, OutcomeEntry, StoredSubscription

log = logging.getLogger("firstfault.notifiers")
_ENTRY_FIELDS = tuple(f.name for f in fields(OutboxEntry))
_TIMES = ("created_at", "updated_at", "next_attempt_at", "lease_until", "sent_at")


@contextmanager
def not_storable() -> Iterator[None]:
    """The database's refusal of a value (not a lost connection) as the port's NotStorable."""
    try:
        yield
    except (sa.exc.DataError, sa.exc.IntegrityError) as exc:
        raise NotStorable(str(exc.orig)) from exc


class SqlNotifyTx:
    """One SQL session seen through the port (it neither begins nor commits: its owner does)."""

    def __init__(self, session: Session) -> None:
        self.s = session

    # -- subscriptions --------------------------------------------------------------------------------------------
    def subscriptions(self) -> list[Subscription]:
        rows = self.s.exec(select(SubscriptionRow).order_by(col(SubscriptionRow.team), col(SubscriptionRow.id))).all()
        out = []
        for row in rows:
            try:
                out.append(_subscription(row))
            except ValidationError as exc:
                log.warning("subscription %s is invalid and ignored: %s", row.id, exc.errors()[0]["msg"])
        return out

    def subscription(self, subscription_id: str, lock: bool = False) -> StoredSubscription | None:
        if "\x00" in subscription_id:  # no id has one, and PostgreSQL refuses to compare with it
            return None
        row = self.s.get(SubscriptionRow, subscription_id, with_for_update=lock)
        if row is None:
            return None
        created = _aware(row.created_at) or row.created_at
        try:
            return StoredSubscription(row.id, created, _subscription(row))
        except ValidationError as exc:
            return StoredSubscription(row.id, created, None, str(exc.errors()[0]["msg"]))

    def add_subscription(self, sub: Subscription, now: datetime) -> None:
        self.s.add(_subscription_row(sub, now))
        with not_storable():
            self.s.flush()

    def replace_subscription(self, sub: Subscription, now: datetime) -> None:
        self.remove_subscription(sub.id)
        self.s.flush()
        self.add_subscription(sub, now)

    def remove_subscription(self, subscription_id: str) -> bool:
        row = self.s.get(SubscriptionRow, subscription_id) if "\x00" not in subscription_id else None
        if row is None:
            return False
        self.s.delete(row)
        self.s.flush()  # gone for the rest of this transaction too
        return True

    # -- the outbox ---------------------------------------------------------------------------------------------
    def outbox_of(self, incident_id: str, revision: int, state: str) -> list[OutboxEntry]:
        return _entries(self.s.exec(select(OutboxRow).where(
            OutboxRow.incident_id == incident_id, OutboxRow.revision == revision,
            OutboxRow.incident_state == state).order_by(col(OutboxRow.id))).all())

    def add_outbox(self, entry: OutboxEntry) -> OutboxEntry:
        row = OutboxRow(**{k: getattr(entry, k) for k in _ENTRY_FIELDS if k != "id"})
        row.incident = entry.incident or {}
        self.s.add(row)
        with not_storable():
            self.s.flush()
        return _entry(row)

    def due(self, now: datetime, limit: int) -> list[OutboxEntry]:
        # FOR UPDATE SKIP LOCKED on PostgreSQL: a row another worker is claiming is left to it. SQLite ignores
        # the clause, and its driver begins a transaction only at the first write, so two claimers would both
        # read a row as due: a write that changes nothing takes the database's write lock first, and a second
        # claimer reads only after the first has committed its claims.
        if self.s.get_bind().dialect.name == "sqlite":
            self.s.execute(sa.update(OutboxRow).where(sa.false()).values(status=OutboxRow.status))
        return _entries(self.s.exec(select(OutboxRow).where(or_(
            col(OutboxRow.status).in_(DELIVERABLE) & (col(OutboxRow.next_attempt_at) <= now),
            (col(OutboxRow.status) == SENDING) & (col(OutboxRow.lease_until) < now),
        )).order_by(col(OutboxRow.id)).limit(limit).with_for_update(skip_locked=True)).all())

    def same_target(self, entry: OutboxEntry) -> list[OutboxEntry]:
        return _entries(self.s.exec(select(OutboxRow).where(
            OutboxRow.incident_id == entry.incident_id, OutboxRow.target_kind == entry.target_kind,
            OutboxRow.target_address == entry.target_address, OutboxRow.id != entry.id)
            .order_by(col(OutboxRow.id))).all())

    def outbox_entry(self, outbox_id: int) -> OutboxEntry | None:
        row = self.s.get(OutboxRow, outbox_id)
        return _entry(row) if row is not None else None

    def update_outbox(self, entry: OutboxEntry) -> None:
        row = self.s.get(OutboxRow, entry.id)
        if row is None:
            raise KeyError(f"no outbox row {entry.id}")
        current = _entry(row)
        for k in _ENTRY_FIELDS:  # only what changed: a naive time read back is never written again as UTC
            if k not in ("id", "incident") and getattr(entry, k) != getattr(current, k):
                setattr(row, k, getattr(entry, k))
        self.s.add(row)

    def next_attempt(self) -> datetime | None:
        value = self.s.exec(select(func.min(OutboxRow.next_attempt_at))
                            .where(col(OutboxRow.status).in_(DELIVERABLE))).one()
        return _aware(value)

    def recent_outbox(self, incident_id: str | None, limit: int) -> list[OutboxEntry]:
        query = select(OutboxRow).order_by(col(OutboxRow.id).desc()).limit(limit)
        if incident_id:
            query = query.where(OutboxRow.incident_id == incident_id)
        return _entries(self.s.exec(query).all())

    def mute_until(self, signature: str | None, cluster: str | None, now: datetime) -> datetime | None:
        if signature is None:
            return None
        row = self.s.get(SignatureMuteRow, (signature, cluster or ""))
        until = _aware(row.until) if row else None
        return until if until is not None and until > now else None

    # -- the ledger ---------------------------------------------------------------------------------------------
    def log(self, entry: OutboxEntry, outcome: str, detail: str, at: datetime) -> None:
        self.s.add(OutcomeRow(outbox_id=entry.id or 0, incident_id=entry.incident_id, outcome=outcome,
                              detail=detail, at=at))

    def outcomes(self, outbox_ids: Collection[int] | None = None) -> list[OutcomeEntry]:
        query = select(OutcomeRow).order_by(col(OutcomeRow.id))
        if outbox_ids is not None:
            query = query.where(col(OutcomeRow.outbox_id).in_(list(outbox_ids)))
        return [OutcomeEntry(r.outbox_id, r.incident_id, r.outcome, r.detail, _aware(r.at) or r.at)
                for r in self.s.exec(query).all()]


def _entry(row: OutboxRow) -> OutboxEntry:
    values: dict[str, Any] = {k: getattr(row, k) for k in _ENTRY_FIELDS}
    for k in _TIMES:
        values[k] = _aware(values[k])
    return OutboxEntry(**values)


def _entries(rows: Collection[OutboxRow]) -> list[OutboxEntry]:
    return [_entry(r) for r in rows]


def _subscription_row(sub: Subscription, now: datetime) -> SubscriptionRow:
    return SubscriptionRow(
        id=sub.id, team=sub.team, name=sub.name, match=sub.match.model_dump(mode="json", exclude_defaults=True),
        targets=[t.model_dump(mode="json") for t in sub.targets], fallback=sub.fallback, mute_until=sub.mute_until,
        quiet_hours=sub.quiet_hours.model_dump(mode="json") if sub.quiet_hours else None,
        created_at=sub.created_at or now)


def _subscription(row: SubscriptionRow) -> Subscription:
    return Subscription.model_validate({
        "id": row.id, "team": row.team, "name": row.name, "match": row.match, "targets": row.targets,
        "fallback": row.fallback, "mute_until": _aware(row.mute_until), "quiet_hours": row.quiet_hours,
        "created_at": _aware(row.created_at)})


def _aware(value: datetime | None) -> datetime | None:
    """SQLite (and PostgreSQL's timestamp without time zone) hand datetimes back naive; everything stored is UTC."""
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value
