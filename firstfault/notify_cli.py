"""`firstfault subscribe | unsubscribe | subscriptions | outcomes | deliver`: subscriptions and what happened to
every notification. Registered by firstfault/cli.py through ``add_commands`` and ``run``."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from datetime import UTC, datetime, time
from typing import Any

from pydantic import ValidationError

from config.settings import load_settings
from notifiers.subscriptions import new_id
from notifiers.wiring import Deliverer, webhook_policy
from schemas.clock import system_clock
from schemas.errors import UsageError
from schemas.subscription import Match, QuietHours, Subscription, Target
from store.incidents import Store
from store.ports import NotifyStore, OutboxEntry


def run(args: argparse.Namespace) -> int:
    store = Store.open(load_settings().database_url)
    try:
        handler = {"subscribe": _subscribe, "unsubscribe": _unsubscribe, "subscriptions": _list,
                   "outcomes": _outcomes, "deliver": _deliver}[args.command]
        return handler(args, store)
    finally:
        store.close()


def subscription_from_args(args: argparse.Namespace, sub_id: str) -> Subscription:
    labels = {}
    for pair in args.labels:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--label wants KEY=VALUE, got {pair!r}")
        labels[key] = value
    targets = ([{"kind": "slack", "address": a} for a in args.slack]
               + [{"kind": "pagerduty", "address": a} for a in args.pagerduty]
               + [{"kind": "webhook", "address": a} for a in args.webhook])
    if not targets:
        raise UsageError("subscribe needs a target: --slack, --pagerduty or --webhook")
    try:
        return Subscription(
            id=sub_id, team=args.team, name=args.name, fallback=args.fallback,
            match=Match(tags=args.tags, signatures=args.signatures, categories=args.categories,
                        clusters=args.clusters, hosts=args.hosts, severities=args.severities, labels=labels),
            targets=[Target.model_validate(t) for t in targets],
            mute_until=datetime.fromisoformat(args.mute_until) if args.mute_until else None,
            quiet_hours=_quiet(args.quiet_hours, args.timezone) if args.quiet_hours else None)
    except (ValidationError, ValueError) as exc:
        raise UsageError(f"subscribe: {_first_problem(exc)}") from exc


def _quiet(text: str, zone: str) -> QuietHours:
    start, sep, end = text.partition("-")
    if not sep:
        raise ValueError(f"--quiet-hours wants HH:MM-HH:MM, got {text!r}")
    return QuietHours(start=time.fromisoformat(start), end=time.fromisoformat(end), timezone=zone)


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
    return str(exc)


def _subscribe(args: argparse.Namespace, store: Store) -> int:
    sub = subscription_from_args(args, new_id())
    policy = webhook_policy(load_settings())
    for target in sub.targets:
        if target.kind == "webhook" and (refused := policy.problem(target.address)) is not None:
            raise UsageError(f"subscribe: {refused}")
    with store.notify() as tx:
        tx.add_subscription(sub, system_clock())
    sys.stdout.write(f"{sub.id}\n")
    return 0


def _unsubscribe(args: argparse.Namespace, store: Store) -> int:
    with store.notify() as tx:
        if not tx.remove_subscription(args.id):
            raise UsageError(f"no subscription {args.id!r} (see: firstfault subscriptions)")
    sys.stdout.write(f"removed {args.id}\n")
    return 0


def subscription_json(sub: Subscription) -> dict[str, Any]:
    out = sub.model_dump(mode="json", exclude={"targets"})
    out["targets"] = [t.describe() for t in sub.targets]  # routing keys are credentials: never printed whole
    return out


def _list(args: argparse.Namespace, store: Store) -> int:
    with store.notify() as tx:
        subs = tx.subscriptions()
    if args.format == "json":
        sys.stdout.write(json.dumps([subscription_json(x) for x in subs], indent=1) + "\n")
        return 0
    for sub in subs:
        match = sub.match.model_dump(exclude_defaults=True)
        what = " ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in match.items())
        extras = [x for x in ("fallback" if sub.fallback else "",
                              f"muted until {sub.mute_until.isoformat()}" if sub.mute_until else "",
                              f"quiet {sub.quiet_hours.start:%H:%M}-{sub.quiet_hours.end:%H:%M} "
                              f"{sub.quiet_hours.timezone}" if sub.quiet_hours else "") if x]
        what = what or ("(everything unmatched)" if sub.fallback else "(own team)")
        sys.stdout.write(f"{sub.id}  team {sub.team}  {what}  → "
                         f"{', '.join(t.describe() for t in sub.targets)}"
                         f"{'  [' + '; '.join(extras) + ']' if extras else ''}\n")
    return 0


def outcome_rows(store: NotifyStore, incident: str | None, limit: int) -> list[dict[str, Any]]:
    with store.notify() as tx:
        rows = tx.recent_outbox(incident, limit)
        steps = tx.outcomes([r.id or 0 for r in rows])
    history: dict[int, list[str]] = {}
    for step in steps:
        history.setdefault(step.outbox_id, []).append(step.outcome)
    return [{"incident": r.incident_id, "revision": r.revision, "state": r.incident_state,
             "subscription": r.subscription_id,
             "target": Target.model_validate({"kind": r.target_kind, "address": r.target_address}).describe(),
             "outcome": _outcome(r), "reason": r.reason, "ref": r.ref,
             "attempts": r.attempts, "steps": history.get(r.id or 0, []),
             "at": _naive(r.sent_at or r.updated_at).isoformat()} for r in rows]


def _naive(at: datetime) -> datetime:
    """UTC without its offset: ``outcomes --format json`` has always printed times so, and scripts parse them."""
    return at.astimezone(UTC).replace(tzinfo=None)


def _outcome(row: OutboxEntry) -> str:
    if row.status == "sent":
        return "rate_limited_then_sent" if row.rate_limited else "sent"
    if row.status in ("superseded", "deduplicated"):
        return "deduplicated"
    return row.status


def _outcomes(args: argparse.Namespace, store: Store) -> int:
    rows = outcome_rows(store, args.incident, args.limit)
    if args.format == "json":
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return 0
    if not rows:
        sys.stdout.write("no notifications recorded yet\n")
    for r in rows:
        why = f"  ({r['reason']})" if r["reason"] and r["outcome"] != "sent" else ""
        sys.stdout.write(f"{r['at'][:19]}  {r['incident']} r{r['revision']}  {r['target']}  {r['outcome']}{why}\n")
    return 0


def _deliver(args: argparse.Namespace, store: Store) -> int:
    deliverer = Deliverer.from_settings(load_settings(), store)
    try:
        done = deliverer.run(system_clock())
    finally:
        deliverer.close()
    summary = ", ".join(f"{n} {status}" for status, n in sorted(Counter(st for _, st in done).items()))
    sys.stdout.write(f"{len(done)} delivery attempt(s){': ' + summary if summary else ''}\n")
    return 0
