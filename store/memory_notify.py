"""An in-memory NotifyStore and PayloadStore (store/ports.py) for tests and benches: no database, the SQL
store's behaviour (tests/store/test_notify_contract.py and test_payload_contract.py run the same suites on both).

Transactions are serialized by one lock and work on a copy of the state, which replaces the state only when
the block ends without an exception: so a row written in a transaction that raises is never seen, as in SQL.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime

from schemas.incident import Incident
from schemas.subscription import Subscription
from store.ports import (
    DELIVERABLE,
    SENDING,
    NotStorable,
    OnSaved,
    OutboxEntry,
    OutcomeEntry,
    ShardPayload,
    ShardRef,
    StoredSubscription,
)


@dataclass
class _State:
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    outbox: dict[int, OutboxEntry] = field(default_factory=dict)
    outcomes: list[OutcomeEntry] = field(default_factory=list)
    mutes: dict[tuple[str, str], datetime] = field(default_factory=dict)  # (signature, cluster or ""): until
    next_id: int = 1


class MemoryNotifyTx:
    def __init__(self, state: _State) -> None:
        self._st = state

    # -- subscriptions --------------------------------------------------------------------------------------------
    def subscriptions(self) -> list[Subscription]:
        return sorted(self._st.subscriptions.values(), key=lambda s: (s.team, s.id))

    def subscription(self, subscription_id: str, lock: bool = False) -> StoredSubscription | None:
        sub = self._st.subscriptions.get(subscription_id)
        if sub is None:
            return None
        assert sub.created_at is not None  # add_subscription sets it
        return StoredSubscription(sub.id, sub.created_at, sub)

    def add_subscription(self, sub: Subscription, now: datetime) -> None:
        if sub.id in self._st.subscriptions:
            raise NotStorable(f"subscription {sub.id!r} exists")
        self._st.subscriptions[sub.id] = sub.model_copy(update={"created_at": sub.created_at or now})

    def replace_subscription(self, sub: Subscription, now: datetime) -> None:
        self.remove_subscription(sub.id)
        self.add_subscription(sub, now)

    def remove_subscription(self, subscription_id: str) -> bool:
        return self._st.subscriptions.pop(subscription_id, None) is not None

    # -- the outbox ---------------------------------------------------------------------------------------------
    def outbox_of(self, incident_id: str, revision: int, state: str) -> list[OutboxEntry]:
        return self._where(lambda e: (e.incident_id, e.revision, e.incident_state) == (incident_id, revision, state))

    def add_outbox(self, entry: OutboxEntry) -> OutboxEntry:
        if any(e.dedup_key == entry.dedup_key for e in self._st.outbox.values()):
            raise NotStorable(f"duplicate dedup_key {entry.dedup_key!r}")
        stored = replace(entry, id=self._st.next_id, incident=entry.incident or {})
        self._st.next_id += 1
        self._st.outbox[stored.id or 0] = stored
        return replace(stored)

    def due(self, now: datetime, limit: int) -> list[OutboxEntry]:
        def claimable(e: OutboxEntry) -> bool:
            if e.status in DELIVERABLE:
                return e.next_attempt_at is not None and e.next_attempt_at <= now
            return e.status == SENDING and e.lease_until is not None and e.lease_until < now
        return self._where(claimable)[:limit]

    def same_target(self, entry: OutboxEntry) -> list[OutboxEntry]:
        return self._where(lambda e: e.id != entry.id and (e.incident_id, e.target_kind, e.target_address) == (
            entry.incident_id, entry.target_kind, entry.target_address))

    def outbox_entry(self, outbox_id: int) -> OutboxEntry | None:
        found = self._st.outbox.get(outbox_id)
        return replace(found) if found is not None else None

    def update_outbox(self, entry: OutboxEntry) -> None:
        if entry.id not in self._st.outbox:
            raise KeyError(f"no outbox row {entry.id}")
        self._st.outbox[entry.id] = replace(entry, incident=self._st.outbox[entry.id].incident)

    def next_attempt(self) -> datetime | None:
        times = [e.next_attempt_at for e in self._st.outbox.values()
                 if e.status in DELIVERABLE and e.next_attempt_at is not None]
        return min(times, default=None)

    def recent_outbox(self, incident_id: str | None, limit: int) -> list[OutboxEntry]:
        return self._where(lambda e: not incident_id or e.incident_id == incident_id)[::-1][:limit]

    def mute_until(self, signature: str | None, cluster: str | None, now: datetime) -> datetime | None:
        until = self._st.mutes.get((signature, cluster or "")) if signature is not None else None
        return until if until is not None and until > now else None

    # -- the ledger ---------------------------------------------------------------------------------------------
    def log(self, entry: OutboxEntry, outcome: str, detail: str, at: datetime) -> None:
        self._st.outcomes.append(OutcomeEntry(entry.id or 0, entry.incident_id, outcome, detail, at))

    def outcomes(self, outbox_ids: Collection[int] | None = None) -> list[OutcomeEntry]:
        wanted = set(outbox_ids) if outbox_ids is not None else None
        return [o for o in self._st.outcomes if wanted is None or o.outbox_id in wanted]

    def _where(self, keep: Callable[[OutboxEntry], bool]) -> list[OutboxEntry]:
        return [replace(e) for _, e in sorted(self._st.outbox.items()) if keep(e)]


class MemoryNotifyStore:
    """``with store.notify() as tx: ...``; ``save_incident`` calls the outbox hook as the incident store does."""

    def __init__(self) -> None:
        self._state = _State()
        self._incidents: dict[str, Incident] = {}
        self._lock = threading.Lock()
        self._inside = threading.local()

    @contextmanager
    def notify(self) -> Iterator[MemoryNotifyTx]:
        if getattr(self._inside, "tx", False):  # SQL would open a second, separate transaction: never meant here
            raise RuntimeError("a notify() transaction inside another on the same thread")
        with self._lock:
            self._inside.tx = True
            try:
                working = copy.deepcopy(self._state)
                yield MemoryNotifyTx(working)
                self._state = working  # reached only when the block did not raise
            finally:
                self._inside.tx = False

    def save_incident(self, job_id: str, build: Callable[[Incident | None], Incident | None],
                      on_saved: OnSaved | None = None) -> Incident | None:
        """``Store.save_incident`` for what the outbox needs of it: `build` gets the job's current incident, what
        it returns is kept, and `on_saved` runs in the same transaction (an exception in it keeps neither)."""
        with self.notify() as tx:
            current = self._incidents.get(job_id)
            new = build(current)
            if new is None:
                return None
            if on_saved is not None:
                on_saved(tx, new, current if current and current.id == new.id else None)
            self._incidents[job_id] = new
            return new


class MemoryPayloadStore:
    """The PayloadStore port (store/ports.py) in memory. `record` stands for the SQL store's recording of a shard
    (Store.record_shard with drop_payload): the shard is scanned from then on and its payload is gone."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, int], tuple[ShardPayload, datetime]] = {}  # the payload, when last sent
        self._scanned: set[tuple[str, str, int]] = set()
        self._lock = threading.Lock()

    def put_payloads(self, payloads: Sequence[ShardPayload], now: datetime) -> None:
        with self._lock:
            for p in payloads:
                self._rows.setdefault(p.ref.key, (p, now))

    def payloads(self, refs: Sequence[ShardRef]) -> list[ShardPayload | None]:
        with self._lock:
            return [hit[0] if (hit := self._rows.get(ref.key)) is not None else None for ref in refs]

    def drop_payloads(self, refs: Sequence[ShardRef]) -> int:
        with self._lock:
            return sum(self._rows.pop(ref.key, None) is not None for ref in refs)

    def record(self, refs: Sequence[ShardRef]) -> None:
        with self._lock:
            for ref in refs:
                self._rows.pop(ref.key, None)
                self._scanned.add(ref.key)

    def scanned(self, refs: Sequence[ShardRef]) -> list[bool]:
        with self._lock:
            return [ref.key in self._scanned for ref in refs]

    def reclaim_payloads(self, sent_before: datetime, now: datetime, limit: int) -> list[ShardRef]:
        with self._lock:
            old = sorted((sent, i, key) for i, (key, (_, sent)) in enumerate(self._rows.items()) if sent < sent_before)
            taken = [key for _, _, key in old[:limit]]
            for key in taken:
                self._rows[key] = (self._rows[key][0], now)
            return [self._rows[key][0].ref for key in taken]

