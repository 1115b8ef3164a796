"""The notification store port: what the notifiers, the API and the CLI need of storage, and nothing of SQL.

Two implementations: ``store.notify_sql`` (SQLite or PostgreSQL, through ``Store.notify()``) and the in-memory
``store.testing.MemoryNotifyStore`` (store/memory_notify.py). ``tests/store/test_notify_contract.py`` runs one
suite against each, so a caller written against this port behaves the same on either.

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

from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from correlator.shards import SourceKey, source_key
from schemas.incident import Incident
from schemas.subscription import Subscription
from schemas.wire import Compression, LogShard
from sources.shard_data import wire_data

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


# -- shard payloads: what a task's reference points to ------------------------------------------------------------
@dataclass(frozen=True)
class ShardRef:
    """A stored shard's payload as a Celery task names it: the shard's identity without its data. Its key is the
    one a stored shard is unique on (job, source token, seq), so the payload and the shard it becomes match."""

    job_id: str
    stream: str
    rank: int | None
    host: str | None
    source: str | None
    seq: int

    @property
    def source_key(self) -> SourceKey:
        return source_key(self.stream, self.rank, self.host, self.source)

    @property
    def key(self) -> tuple[str, str, int]:
        return self.job_id, self.source_key.token, self.seq

    def to_json(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "stream": self.stream, "rank": self.rank, "host": self.host,
                "source": self.source, "seq": self.seq}

    @classmethod
    def from_json(cls, value: Any) -> ShardRef:
        """A task's argument back; ValueError when it is not one (a task of another sender)."""
        if not isinstance(value, dict) or set(value) != _REF_FIELDS:
            raise ValueError(f"not a shard reference: {str(value)[:200]}")
        job_id, stream, rank, host, source, seq = (value[f] for f in _REF_ORDER)
        if not (isinstance(job_id, str) and isinstance(stream, str) and _int(seq) and (rank is None or _int(rank))
                and (host is None or isinstance(host, str)) and (source is None or isinstance(source, str))):
            raise ValueError(f"not a shard reference: {str(value)[:200]}")
        return cls(job_id, stream, rank, host, source, seq)


_REF_ORDER = ("job_id", "stream", "rank", "host", "source", "seq")
_REF_FIELDS = set(_REF_ORDER)


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class ShardPayload:
    """A shard as the edge validated it: its reference, whether it ends its source, and its data as the producer
    packed it (`data` compressed by `compression`, base64 undone: sources.shard_data.packed_shard_data), which the
    worker inflates (sources.shard_data.inflate). A few times smaller than the log it holds, so cheaper to keep."""

    ref: ShardRef
    eof: bool
    compression: Compression
    data: bytes

    @classmethod
    def of(cls, shard: LogShard, data: bytes) -> ShardPayload:
        """A validated shard's payload: `data` is packed_shard_data(shard)."""
        return cls(ShardRef(shard.job_id, shard.stream, shard.rank, shard.host, shard.source, shard.seq), shard.eof,
                   shard.compression, data)

    def as_shard(self) -> LogShard:
        """The LogShard its producer sent: the same compression and the same compressed bytes (a dead letter)."""
        r = self.ref
        return LogShard.model_validate({"job_id": r.job_id, "rank": r.rank, "host": r.host, "stream": r.stream,
                                        "seq": r.seq, "eof": self.eof, "compression": self.compression,
                                        "data": wire_data(self.compression, self.data), "source": r.source})


class PayloadStore(Protocol):
    """Where the edge (the HTTP ingest, the Kafka consumer) leaves a validated shard's packed bytes for the worker
    that scans it, so that a task carries a ShardRef, not the shard. Two implementations: the SQL store's
    (``Store.payloads``: store/payloads.py) and ``store.testing.MemoryPayloadStore``;
    ``tests/store/test_payload_contract.py`` runs one suite against each.

    A payload lives from the hand-off until its shard is recorded: the SQL store drops it in the transaction that
    records the shard (``Store.record_shard(s)(..., drop_payloads=True)``), or ``drop_payloads`` does."""

    def put_payloads(self, payloads: Sequence[ShardPayload], now: datetime) -> None:
        """Keep them, in one transaction. A payload whose key is kept already stays as it was (a redelivered
        message is the same shard). TransportError when the store is unreachable."""
        ...

    def payloads(self, refs: Sequence[ShardRef]) -> list[ShardPayload | None]:
        """Each ref's payload, in order; None for one not kept (dropped, or never stored)."""
        ...

    def drop_payloads(self, refs: Sequence[ShardRef]) -> int:
        """Forget them; how many there were."""
        ...

    def scanned(self, refs: Sequence[ShardRef]) -> list[bool]:
        """Whether each ref's shard is recorded (scanned and stored), in order: a task whose payload is gone for
        such a shard is a redelivery, not a loss."""
        ...

    def reclaim_payloads(self, sent_before: datetime, now: datetime, limit: int) -> list[ShardRef]:
        """The payloads last handed on before `sent_before`, oldest first, each noted as handed on again at `now`
        (so that two sweepers, or the next sweep, do not take it too): what a sweeper re-sends when its task was
        lost. At most `limit`."""
        ...


# Called inside the incident's transaction, so that what it writes (the outbox) commits or rolls back with it.
OnSaved = Callable[[NotifyTx, Incident, Incident | None], None]
# (the new incident, the resolved one it is a regression of) -> the earlier one's next revision, or None
Regressed = Callable[[Incident, Incident], Incident | None]

