"""The notification outbox: exactly one delivery per incident revision and destination.

``enqueue`` runs inside the transaction that saves the incident (the store's ``on_saved`` hook), so an incident
change and its notifications commit or roll back together. ``deliver_due`` sends what is due:

1. claim: a row goes ``pending``/``held`` → ``sending`` with a fresh ``claim_id`` and a lease, committed before
   anything is sent (FOR UPDATE SKIP LOCKED on PostgreSQL, so two workers never claim the same row);
2. send, then record the answer (Slack ``channel/ts``, the PagerDuty dedup key) only if the claim is still ours;
3. a row still ``sending`` after its lease belonged to a worker that died — maybe after sending, before
   recording; a timeout or a 5xx is as ambiguous. Such a row is ``maybe_sent``: before sending again we ask the
   destination (``Notifier.find_sent``: Slack's history, by the message metadata we attach); PagerDuty and
   webhooks deduplicate by key themselves.

Per incident and destination, only the oldest unfinished row is ever claimed: a newer revision waits, and
when the older one falls due it is superseded by the newer (one post, the current state) unless it may
already have been sent. So two workers never post two roots for one incident, and the thread stays in order.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from catalog.loader import Catalog
from notifiers.base import Delivery, Notifier, RateLimited
from notifiers.pacing import Pacer
from notifiers.routing import Route, route
from pipeline import metrics
from schemas.errors import PermanentError, RetryableError
from schemas.incident import Incident
from schemas.retry import OUTBOX
from schemas.subscription import Target
from store.ports import DELIVERABLE, SENDING, NotifyStore, NotifyTx, OnSaved, OutboxEntry

LEASE = timedelta(minutes=2)  # longer than any one send (timeouts are 10 s); a dead worker's row waits this long
STATUS_OF: dict[str, str] = {"send": "pending", "held_quiet_hours": "held"}


def collateral_ids(catalog: Catalog) -> frozenset[str]:
    """Catalog entries whose role is collateral: a root cause among them never pages."""
    return frozenset(s.id for s in catalog.signatures if s.role.value == "collateral")


def delivery_key(incident: Incident, route_: Route) -> str:
    """Unique per (incident, revision, state, destination, subscription); the destination is hashed (a webhook
    URL can be long, a routing key is a credential)."""
    where = hashlib.sha256(f"{route_.target.key}\x00{route_.subscription_id}".encode()).hexdigest()[:24]
    return f"{incident.id}:r{incident.revision}:{incident.state}:{where}"


def enqueue(tx: NotifyTx, incident: Incident, now: datetime,
            collateral_signatures: Collection[str] = ()) -> list[OutboxEntry]:
    """Write the outbox rows of this incident revision (idempotent: a re-save writes nothing new)."""
    routes = route(incident, tx.subscriptions(), now, collateral_signatures,
                   tx.mute_until(incident.signature, incident.cluster, now))
    mine = tx.outbox_of(incident.id, incident.revision, incident.state)
    keys = {r.dedup_key for r in mine}
    live = {(r.target_kind, r.target_address) for r in mine if r.status in (*DELIVERABLE, SENDING, "sent")}
    snapshot = incident.model_dump(mode="json")
    written = []
    for r in routes:
        key = delivery_key(incident, r)
        if key in keys:
            continue
        status, reason = STATUS_OF.get(r.outcome, r.outcome), r.reason
        if status in DELIVERABLE and (r.target.kind, r.target.address) in live:
            status, reason = "deduplicated", "this destination already has this revision"
        live |= {(r.target.kind, r.target.address)} if status in DELIVERABLE else set()
        row = OutboxEntry(dedup_key=key, incident_id=incident.id, revision=incident.revision,
                        incident_state=incident.state, subscription_id=r.subscription_id, target_kind=r.target.kind,
                        target_address=r.target.address, status=status, reason=reason, incident=snapshot,
                        next_attempt_at=(r.not_before or now) if status in DELIVERABLE else None,
                        created_at=now, updated_at=now)
        row = tx.add_outbox(row)
        _log(tx, row, "queued" if status == "pending" else status, reason, now)
        written.append(row)
    return written


def on_saved(clock: Callable[[], datetime], collateral_signatures: Collection[str] = ()) -> OnSaved:
    """The store hook: ``Pipeline(..., on_saved=on_saved(clock, collateral_ids(catalog)))``."""
    def hook(tx: NotifyTx, incident: Incident, previous: Incident | None) -> None:
        enqueue(tx, incident, clock(), collateral_signatures)
    return hook


@dataclass(frozen=True)
class Claim:
    row_id: int
    claim_id: str
    incident: Incident
    target: Target
    recovering: bool  # an earlier attempt may have been sent (crash, timeout, 5xx): look before sending again
    root_ref: str | None
    delivery_id: str
    attempts: int


def deliver_due(store: NotifyStore, notifiers: Mapping[str, Notifier], now: datetime, pacer: Pacer | None = None,
                limit: int = 50) -> list[tuple[int, str]]:
    """Send every due delivery (at most ``limit``); returns (outbox id, final or next status) for each.

    One row is claimed at a time, just before it is sent: a worker that dies mid-run (SIGKILL, OOM, a lost host)
    strands only the row it was sending, which is truly in doubt and waits out its lease. Claiming the whole batch
    first stranded every row of it for the lease (2 minutes), though none of the others had been sent."""
    done: list[tuple[int, str]] = []
    while len(done) < limit:
        claims = claim_due(store, now, limit, take=1)
        if not claims:
            break
        claim = claims[0]
        outcome = _deliver(store, notifiers, claim, now, pacer)
        metrics.notified(claim.target.kind, outcome)  # sent | pending (to retry) | failed | suppressed | lost-claim
        if outcome == "sent" and claim.root_ref is None:  # the first post to this destination (a root)
            metrics.INCIDENT_TO_POST.labels(claim.target.kind).observe(
                max(0.0, (now - claim.incident.created_at).total_seconds()))
        done.append((claim.row_id, outcome))
    return done


def claim_due(store: NotifyStore, now: datetime, limit: int, take: int | None = None) -> list[Claim]:
    """Claim due rows among the first ``limit`` (oldest first), at most ``take`` of them."""
    claims: list[Claim] = []
    with store.notify() as tx:
        for row in tx.due(now, limit):
            siblings = tx.same_target(row)
            if any((o.id or 0) < (row.id or 0) and o.status in (*DELIVERABLE, SENDING) for o in siblings):
                continue  # an older revision goes first (it may be in flight, or superseded by this one below)
            if not row.maybe_sent and any((o.id or 0) > (row.id or 0) and o.status in DELIVERABLE
                                          for o in siblings):
                _finish(tx, row, "superseded", "a newer revision replaces it", now)
                continue
            claims.append(_claim(tx, row, siblings, now))
            if take is not None and len(claims) >= take:
                break
    return claims


def _claim(tx: NotifyTx, row: OutboxEntry, siblings: list[OutboxEntry], now: datetime) -> Claim:
    recovering = row.maybe_sent
    sent = sorted((o for o in siblings if o.status == "sent" and o.ref), key=lambda o: o.revision)
    row.status, row.claim_id, row.lease_until = SENDING, secrets.token_hex(8), now + LEASE
    row.attempts += 1
    row.maybe_sent, row.updated_at = True, now
    tx.update_outbox(row)
    if recovering:
        _log(tx, row, "recovering", "an earlier attempt may have been sent; checking the destination first", now)
    return Claim(row.id or 0, row.claim_id, Incident.model_validate(row.incident),
                 Target.model_validate({"kind": row.target_kind, "address": row.target_address}),
                 recovering, sent[-1].ref if sent else None,  # the latest root (a deleted one is replaced)
                 f"{row.incident_id}.r{row.revision}.{row.incident_state}.{row.id}", row.attempts)


def _deliver(store: NotifyStore, notifiers: Mapping[str, Notifier], claim: Claim, now: datetime,
             pacer: Pacer | None) -> str:
    notifier = notifiers.get(claim.target.kind)
    if notifier is None:
        return _record(store, claim, now, failed=f"no {claim.target.kind} notifier configured")
    if claim.target.kind == "pagerduty" and claim.incident.state == "resolved" and claim.root_ref is None:
        return _record(store, claim, now, final=("suppressed", "resolved before anyone was paged"))
    try:
        if claim.recovering:
            found = notifier.find_sent(claim.incident, claim.target.address, claim.root_ref, claim.delivery_id)
            if found is not None:
                return _record(store, claim, now, delivery=found)
        if pacer is not None and claim.target.kind == "slack":
            decision = pacer.take(claim.target.address, now)
            if not decision.send and decision.retry_at is not None:
                return _record(store, claim, now, retry_at=decision.retry_at, why="paced: ~1 message/s per channel",
                               limited=True, count=False)
        delivery = notifier.send(claim.incident, claim.target.address, claim.root_ref, claim.delivery_id)
    except RateLimited as exc:
        wait = timedelta(seconds=exc.retry_after or 1.0)
        if pacer is not None and claim.target.kind == "slack":
            pacer.hold(claim.target.address, now + wait)
        return _record(store, claim, now, retry_at=now + wait, why=f"rate limited: {exc}", limited=True)
    except RetryableError as exc:
        return _record(store, claim, now, retry_at=now + _backoff(exc, claim), why=str(exc))
    except PermanentError as exc:
        return _record(store, claim, now, failed=str(exc))
    return _record(store, claim, now, delivery=delivery)


def _backoff(exc: RetryableError, claim: Claim) -> timedelta:
    """Retry-After when the server gave one, else 10 s, 20 s, 40 s ... up to 20 minutes (schemas.retry.OUTBOX:
    PagerDuty advises minutes of backoff; Alertmanager retries until its group interval)."""
    return timedelta(seconds=OUTBOX.delay(claim.attempts, exc.retry_after))


def _record(store: NotifyStore, claim: Claim, now: datetime, *, delivery: Delivery | None = None,
            retry_at: datetime | None = None, why: str = "", failed: str | None = None,
            final: tuple[str, str] | None = None, limited: bool = False, count: bool = True) -> str:
    with store.notify() as tx:
        row = tx.outbox_entry(claim.row_id)
        if row is None or row.claim_id != claim.claim_id:
            return "lost-claim"  # our lease ran out and another worker took over; it records the outcome
        row.rate_limited = row.rate_limited or limited
        if limited:  # a 429 or our own pacing: certainly not sent
            row.maybe_sent = claim.recovering if not count else False
        if not count:
            row.attempts -= 1
        if delivery is not None:
            row.ref, row.sent_at = delivery.ref, now
            outcome = "rate_limited_then_sent" if row.rate_limited else "sent"
            row.maybe_sent = False
            _finish(tx, row, "sent", delivery.detail, now, outcome)
        elif final is not None:
            _finish(tx, row, final[0], final[1], now)
        elif failed is not None or OUTBOX.exhausted(row.attempts):
            _finish(tx, row, "failed", failed or f"gave up after {row.attempts} attempts: {why}", now)
        else:
            assert retry_at is not None
            row.status, row.next_attempt_at, row.claim_id, row.lease_until = "pending", retry_at, None, None
            row.reason, row.updated_at = why, now
            tx.update_outbox(row)
            _log(tx, row, "rate_limited" if limited else "retry", f"{why}; next at {retry_at.isoformat()}", now)
        return row.status


def _finish(tx: NotifyTx, row: OutboxEntry, status: str, reason: str, now: datetime,
            outcome: str | None = None) -> None:
    row.status, row.reason, row.updated_at = status, reason, now
    row.claim_id, row.lease_until, row.next_attempt_at = None, None, None
    tx.update_outbox(row)
    _log(tx, row, outcome or status, reason, now)


def _log(tx: NotifyTx, row: OutboxEntry, outcome: str, detail: str, now: datetime) -> None:
    tx.log(row, outcome, detail[:2000], now)

