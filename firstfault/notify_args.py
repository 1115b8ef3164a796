"""The arguments of `firstfault subscribe | unsubscribe | subscriptions | outcomes | deliver`. Light on purpose:
the CLI builds every parser at start, and the store and notifier imports wait in firstfault/notify_cli.py until one
of these commands runs."""

from __future__ import annotations

from typing import Any

COMMANDS = ("subscribe", "unsubscribe", "subscriptions", "outcomes", "deliver")


def add_commands(sub: Any) -> None:
    s = sub.add_parser("subscribe", help="route matching incidents to Slack, PagerDuty or a webhook")
    s.add_argument("--team", required=True)
    s.add_argument("--name", default="")
    for flag, dest, what in [("--tag", "tags", "failure tag (nccl, xid, oom...)"),
                             ("--signature", "signatures", "catalog id, wildcards allowed: 'nccl.*'"),
                             ("--category", "categories", "category (memory, communication...)"),
                             ("--cluster", "clusters", "cluster name, wildcards allowed"),
                             ("--host", "hosts", "initiating host, wildcards allowed"),
                             ("--severity", "severities", "critical | error | warning | info"),
                             ("--label", "labels", "job label KEY=VALUE (value wildcards allowed)"),
                             ("--slack", "slack", "channel name (#ml-oncall) or id"),
                             ("--pagerduty", "pagerduty", "Events v2 integration (routing) key"),
                             ("--webhook", "webhook", "https URL, signed with FIRSTFAULT_WEBHOOK_SECRET")]:
        s.add_argument(flag, dest=dest, action="append", default=[], help=f"{what}; repeatable")
    s.add_argument("--fallback", action="store_true", help="only incidents no other subscription matched")
    s.add_argument("--mute-until", help="ISO time with zone, e.g. 2026-12-02T09:00:00Z")
    s.add_argument("--quiet-hours", help="HH:MM-HH:MM: pages wait until the end (critical pages anyway)")
    s.add_argument("--timezone", default="UTC", help="time zone of --quiet-hours")
    u = sub.add_parser("unsubscribe", help="remove a subscription")
    u.add_argument("id")
    ls = sub.add_parser("subscriptions", help="list subscriptions")
    ls.add_argument("--format", choices=["text", "json"], default="text")
    o = sub.add_parser("outcomes", help="what happened to each notification: sent, muted, suppressed, failed...")
    o.add_argument("--incident", help="only this incident")
    o.add_argument("--limit", type=int, default=100)
    o.add_argument("--format", choices=["text", "json"], default="text")
    sub.add_parser("deliver", help="send the notifications that are due, once")
