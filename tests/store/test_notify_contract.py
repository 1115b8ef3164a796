"""One suite for every NotifyStore (store/ports.py): the in-memory one, SQLite, and PostgreSQL (integration).

What the outbox and the subscription commands rely on, asserted the same way against each: a caller written
against the port cannot tell them apart.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from schemas.errors import RetryableError
from schemas.subscription import Match, Subscription, Target
from store.ports import SENDING, NotifyStore, NotStorable, OutboxEntry

NOW = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
SLACK = Target(kind="slack", address="#ml-oncall")


def sub(sub_id: str, team: str = "pretrain", **kw: Any) -> Subscription:
    return Subscription(id=sub_id, team=team, match=Match(tags=["oom"]), targets=[SLACK], **kw)


def entry(key: str, status: str = "pending", due: datetime | None = NOW, incident: str = "inc-1",
          revision: int = 1, address: str = "#ml-oncall", **kw: Any) -> OutboxEntry:
    return OutboxEntry(dedup_key=key, incident_id=incident, revision=revision, incident_state="open",
                       subscription_id="s1", target_kind="slack", target_address=address, status=status,
                       created_at=NOW, updated_at=NOW, next_attempt_at=due, incident={"id": incident}, **kw)


def add(store: NotifyStore, *entries: OutboxEntry) -> list[int]:
    with store.notify() as tx:
        return [tx.add_outbox(e).id or 0 for e in entries]


# -- subscriptions ---------------------------------------------------------------------------------------------------
def test_subscriptions_are_listed_by_team_then_id_and_keep_their_creation_time(notify_store: NotifyStore) -> None:
    with notify_store.notify() as tx:
        tx.add_subscription(sub("b", team="infra"), NOW)
        tx.add_subscription(sub("a", team="pretrain", created_at=NOW - timedelta(days=1)), NOW)
        tx.add_subscription(sub("c", team="infra"), NOW)
    with notify_store.notify() as tx:
        assert [s.id for s in tx.subscriptions()] == ["b", "c", "a"]
        found = tx.subscription("a")
        assert found is not None and found.subscription is not None
        assert found.created_at == NOW - timedelta(days=1) and found.subscription.targets == [SLACK]
        assert tx.subscription("b").created_at == NOW  # type: ignore[union-attr]


def test_replace_and_remove(notify_store: NotifyStore) -> None:
    with notify_store.notify() as tx:
        tx.add_subscription(sub("a"), NOW)
    with notify_store.notify() as tx:
        tx.replace_subscription(sub("a", team="infra", created_at=NOW), NOW + timedelta(hours=1))
    with notify_store.notify() as tx:
        assert [(s.id, s.team) for s in tx.subscriptions()] == [("a", "infra")]
        assert tx.remove_subscription("a") is True
        assert tx.remove_subscription("a") is False
        assert tx.subscription("a") is None and tx.subscriptions() == []


def test_a_taken_id_is_not_storable_and_the_first_stays(notify_store: NotifyStore) -> None:
    with notify_store.notify() as tx:
        tx.add_subscription(sub("a"), NOW)
    with pytest.raises(NotStorable), notify_store.notify() as tx:
        tx.add_subscription(sub("a", team="infra"), NOW)
    with notify_store.notify() as tx:
        assert [(s.id, s.team) for s in tx.subscriptions()] == [("a", "pretrain")]


def test_an_id_with_a_nul_byte_is_simply_not_found(notify_store: NotifyStore) -> None:
    with notify_store.notify() as tx:
        assert tx.subscription("sub-\x00") is None and tx.remove_subscription("sub-\x00") is False


def test_a_transaction_that_raises_keeps_nothing(notify_store: NotifyStore) -> None:
    with pytest.raises(RuntimeError), notify_store.notify() as tx:
        tx.add_subscription(sub("a"), NOW)
        tx.log(tx.add_outbox(entry("k1")), "queued", "", NOW)
        raise RuntimeError("the incident's transaction failed")
    with notify_store.notify() as tx:
        assert tx.subscriptions() == [] and tx.recent_outbox(None, 10) == [] and tx.outcomes() == []


# -- the outbox -------------------------------------------------------------------------------------------------------
def test_rows_get_growing_ids_and_a_taken_dedup_key_is_refused(notify_store: NotifyStore) -> None:
    first, second = add(notify_store, entry("k1"), entry("k2"))
    assert 0 < first < second
    with pytest.raises(NotStorable), notify_store.notify() as tx:
        tx.add_outbox(entry("k1"))
    with notify_store.notify() as tx:
        assert [e.dedup_key for e in tx.recent_outbox(None, 10)] == ["k2", "k1"]


def test_outbox_of_is_one_revision_and_state(notify_store: NotifyStore) -> None:
    add(notify_store, entry("k1"), entry("k2", revision=2), entry("k3", incident="inc-2"))
    with notify_store.notify() as tx:
        assert [e.dedup_key for e in tx.outbox_of("inc-1", 1, "open")] == ["k1"]
        assert tx.outbox_of("inc-1", 1, "resolved") == []


def test_due_is_deliverable_rows_whose_time_has_come_and_expired_leases_oldest_first(
        notify_store: NotifyStore) -> None:
    add(notify_store,
        entry("future", due=NOW + timedelta(seconds=1)),
        entry("now", due=NOW),
        entry("held", status="held", due=NOW - timedelta(hours=1)),
        entry("sent", status="sent", due=None),
        entry("muted", status="muted", due=None),
        entry("lease-live", status=SENDING, due=None, lease_until=NOW + timedelta(seconds=1)),
        entry("lease-ending", status=SENDING, due=None, lease_until=NOW),  # ends at NOW: not yet expired
        entry("lease-gone", status=SENDING, due=None, lease_until=NOW - timedelta(seconds=1)))
    with notify_store.notify() as tx:
        assert [e.dedup_key for e in tx.due(NOW, 10)] == ["now", "held", "lease-gone"]
        assert [e.dedup_key for e in tx.due(NOW, 2)] == ["now", "held"]


def test_an_update_is_seen_by_the_next_transaction_with_aware_times(notify_store: NotifyStore) -> None:
    [row_id] = add(notify_store, entry("k1"))
    with notify_store.notify() as tx:
        [row] = tx.due(NOW, 10)
        row.status, row.claim_id, row.lease_until, row.attempts = SENDING, "c1", NOW + timedelta(minutes=2), 1
        row.maybe_sent = True
        tx.update_outbox(row)
    with notify_store.notify() as tx:
        got = tx.outbox_entry(row_id)
        assert got is not None and (got.status, got.claim_id, got.attempts, got.maybe_sent) == (SENDING, "c1", 1, True)
        assert got.lease_until == NOW + timedelta(minutes=2) and got.lease_until.tzinfo is not None
        assert got.created_at == NOW and got.incident == {"id": "inc-1"}
        assert tx.due(NOW, 10) == [] and tx.outbox_entry(row_id + 1000) is None


def test_a_changed_entry_is_not_stored_until_updated(notify_store: NotifyStore) -> None:
    [row_id] = add(notify_store, entry("k1"))
    with notify_store.notify() as tx:
        tx.due(NOW, 10)[0].status = "failed"
    with notify_store.notify() as tx:
        assert tx.outbox_entry(row_id).status == "pending"  # type: ignore[union-attr]


def test_same_target_is_the_incidents_other_rows_to_that_destination(notify_store: NotifyStore) -> None:
    add(notify_store, entry("k1"), entry("k2", revision=2), entry("other-channel", address="#infra"),
        entry("other-incident", incident="inc-2"))
    with notify_store.notify() as tx:
        [k1] = [e for e in tx.outbox_of("inc-1", 1, "open") if e.dedup_key == "k1"]
        assert [e.dedup_key for e in tx.same_target(k1)] == ["k2"]


def test_next_attempt_is_the_earliest_deliverable(notify_store: NotifyStore) -> None:
    with notify_store.notify() as tx:
        assert tx.next_attempt() is None
    add(notify_store, entry("later", due=NOW + timedelta(minutes=5)), entry("sooner", due=NOW + timedelta(minutes=1)),
        entry("failed", status="failed", due=NOW - timedelta(days=1)))
    with notify_store.notify() as tx:
        assert tx.next_attempt() == NOW + timedelta(minutes=1)


def test_recent_outbox_is_newest_first_of_one_incident(notify_store: NotifyStore) -> None:
    add(notify_store, entry("a1"), entry("b1", incident="inc-2"), entry("a2", revision=2), entry("a3", revision=3))
    with notify_store.notify() as tx:
        assert [e.dedup_key for e in tx.recent_outbox("inc-1", 2)] == ["a3", "a2"]
        assert [e.dedup_key for e in tx.recent_outbox(None, 10)] == ["a3", "a2", "b1", "a1"]


def test_the_ledger_keeps_steps_in_order(notify_store: NotifyStore) -> None:
    with notify_store.notify() as tx:
        one, two = tx.add_outbox(entry("k1")), tx.add_outbox(entry("k2"))
        tx.log(one, "queued", "", NOW)
        tx.log(two, "queued", "", NOW)
        tx.log(one, "sent", "C0ONCALL/1.2", NOW + timedelta(seconds=1))
    with notify_store.notify() as tx:
        assert [(o.outcome, o.detail) for o in tx.outcomes([one.id or 0])] == [("queued", ""), ("sent", "C0ONCALL/1.2")]
        assert [o.outcome for o in tx.outcomes()] == ["queued", "queued", "sent"]
        assert tx.outcomes([one.id or 0])[-1].at == NOW + timedelta(seconds=1)


def test_two_claimers_at_once_never_take_the_same_row(notify_store: NotifyStore) -> None:
    """`firstfault deliver` may run while `serve`'s delivery loop does: a row one has claimed (uncommitted) is
    not claimed by the other. Either gets other rows (PostgreSQL skips locked ones), waits and then sees the
    claim (one writer at a time), or fails with a retryable error; it never takes the row too."""
    add(notify_store, *(entry(f"k{i}", incident=f"inc-{i}") for i in range(4)))
    claimed: dict[str, list[int]] = {"a": [], "b": []}
    a_claimed, errors = threading.Event(), []

    def claim(who: str, hold: float) -> None:
        try:
            with notify_store.notify() as tx:
                for row in tx.due(NOW, 2):
                    row.status, row.claim_id = SENDING, who
                    row.lease_until = NOW + timedelta(minutes=2)
                    tx.update_outbox(row)
                    claimed[who].append(row.id or 0)
                if who == "a":
                    a_claimed.set()
                    a_claimed.wait()
                    threading.Event().wait(hold)  # b starts while a's claim is uncommitted
        except RetryableError as exc:
            errors.append(exc)

    a = threading.Thread(target=claim, args=("a", 0.5))
    a.start()
    assert a_claimed.wait(30)
    claim("b", 0)
    a.join(30)
    assert claimed["a"] and not set(claimed["a"]) & set(claimed["b"] if not errors else [])
    with notify_store.notify() as tx:
        owners = {e.id: e.claim_id for e in tx.recent_outbox(None, 10)}
    assert all(owners[i] == "a" for i in claimed["a"])  # b never overwrote a's claim
