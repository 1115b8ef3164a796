"""The notification store port: what the notifiers, the API and the CLI need of storage, and nothing of SQL.

Two implementations: ``store.notify_sql`` (SQLite or PostgreSQL, through ``Store.notify()``) and the in-memory
``store.testing.MemoryNotifyStore``. ``tests/store/test_notify_contract.py`` runs one suite against each, so a
caller written against this port behaves the same on either.

Everything happens inside a transaction (``NotifyStore.notify()``): the outbox rows of an incident revision commit
or roll back with the incident (the store's ``on_saved`` hook receives the incident's own transaction), and a
claim is committed before anything is sent. An exception inside the ``with`` block rolls everything back.

The outbox state machine itself lives in ``notifiers/outbox.py``; the port only keeps its rows and answers the
queries it asks (which rows are due, which share a destination), with these statuses:
``pending``/``held`` (deliverable) → ``sending`` (claimed, under a lease) → ``sent`` | ``failed``, or final from the
start (``muted``, ``suppressed_collateral``, ``deduplicated``, ``superseded``, ``suppressed``).

Datetimes come back aware (UTC), whatever the database hands back.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from schemas.incident import Incident
from schemas.subscription import Subscription

DELIVERABLE = ("pending", "held")  # a worker may claim these once next_attempt_at has come
SENDING = "sending"  # claimed: a worker holds it until lease_until


class NotStorable(Exception):
    """A value the database refuses (a NUL byte in PostgreSQL text, a string over its column, a duplicate key):
    the caller's mistake, not a transient failure. The transaction is rolled back."""


@dataclass
class OutboxEntry:
    """One delivery: an incident revision to one destination. ``id`` is None until it is added."""

    dedup_key: str  # unique: incident, revision, state, destination, subscription
    incident_id: str
    revision: int
    incident_state: str
    subscription_id: str
    target_kind: str
    target_address: str
    status: str
    created_at: datetime
    updated_at: datetime
    reason: str = ""
    incident: dict[str, Any] | None = None  # the incident as it was routed (JSON)
    attempts: int = 0
    rate_limited: bool = False  # a 429 or our pacing delayed it: "rate-limited then sent"
    maybe_sent: bool = False  # an attempt began with no clear "not sent" answer: look before sending again
    next_attempt_at: datetime | None = None
    lease_until: datetime | None = None
    claim_id: str | None = None
    ref: str | None = None  # Slack channel/ts, PagerDuty dedup key, delivery id
    sent_at: datetime | None = None
    id: int | None = None


@dataclass(frozen=True)
class OutcomeEntry:
    """A step in the ledger of one delivery (queued, rate_limited, retry, recovering, sent, failed, ...)."""

    outbox_id: int
    incident_id: str
    outcome: str
    detail: str
    at: datetime


@dataclass(frozen=True)
class StoredSubscription:
    """A stored subscription as found: ``subscription`` is None when it no longer validates (edited by hand, an
    older schema), and ``problem`` then says why."""

    id: str
    created_at: datetime
    subscription: Subscription | None
    problem: str = ""


class NotifyTx(Protocol):
    """One transaction's view of subscriptions, the outbox and its ledger."""

    # -- subscriptions --------------------------------------------------------------------------------------------
    def subscriptions(self) -> list[Subscription]:
        """Every valid subscription, by team then id; an invalid one is skipped (with a warning): it must not
        stop incidents from being saved, since routing runs in their transaction."""
        ...

    def subscription(self, subscription_id: str, lock: bool = False) -> StoredSubscription | None:
        """One subscription, valid or not; with lock, held until the end of the transaction (two writers never
        lose one's change). None when there is no such id."""
        ...

    def add_subscription(self, sub: Subscription, now: datetime) -> None:
        """Store a new one (created_at: its own, else now); a taken id is NotStorable."""
        ...

    def replace_subscription(self, sub: Subscription, now: datetime) -> None:
        """Store ``sub`` in place of the one with its id (or anew)."""
        ...

    def remove_subscription(self, subscription_id: str) -> bool:
        """False when there was none."""
        ...

    # -- the outbox ---------------------------------------------------------------------------------------------
    def outbox_of(self, incident_id: str, revision: int, state: str) -> list[OutboxEntry]:
        """The rows already written for this incident revision and state."""
        ...

    def add_outbox(self, entry: OutboxEntry) -> OutboxEntry:
        """Write a new row; returns it with its id (ids grow with each row). A taken dedup_key is NotStorable."""
        ...

    def due(self, now: datetime, limit: int) -> list[OutboxEntry]:
        """At most ``limit`` rows a worker may claim, oldest first: deliverable with next_attempt_at <= now, or
        sending with lease_until < now (their worker died). Locked for this transaction; rows another
        transaction holds are skipped, so two workers never claim the same row."""
        ...

    def same_target(self, entry: OutboxEntry) -> list[OutboxEntry]:
        """The other rows of the entry's incident to the same destination."""
        ...

    def outbox_entry(self, outbox_id: int) -> OutboxEntry | None:
        ...

    def update_outbox(self, entry: OutboxEntry) -> None:
        """Write back an entry's fields (it must have an id)."""
        ...

    def next_attempt(self) -> datetime | None:
        """When the earliest deliverable row falls due, or None."""
        ...

    def recent_outbox(self, incident_id: str | None, limit: int) -> list[OutboxEntry]:
        """The newest rows first (of one incident, when given)."""
        ...

    def mute_until(self, signature: str | None, cluster: str | None, now: datetime) -> datetime | None:
        """When the mute of this root-cause signature on this cluster (set from Slack) ends, or None when it is
        not muted at ``now``."""
        ...

    # -- the ledger ---------------------------------------------------------------------------------------------
    def log(self, entry: OutboxEntry, outcome: str, detail: str, at: datetime) -> None:
        ...

    def outcomes(self, outbox_ids: Collection[int] | None = None) -> list[OutcomeEntry]:
        """Ledger steps in the order they were written (of these rows, when given)."""
        ...


class NotifyStore(Protocol):
    def notify(self) -> AbstractContextManager[NotifyTx]:
        """A transaction: committed when the block ends, rolled back when it raises."""
        ...


# Called inside the incident's transaction, so that what it writes (the outbox) commits or rolls back with it.
OnSaved = Callable[[NotifyTx, Incident, Incident | None], None]
# (the new incident, the resolved one it is a regression of) -> the earlier one's next revision, or None
Regressed = Callable[[Incident, Incident], Incident | None]

