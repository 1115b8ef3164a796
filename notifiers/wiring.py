"""Builds the notifiers from firstfault's Settings, and the two calls the pipeline needs: the store hook that
writes the outbox with each incident change, and ``Deliverer.run(now)`` that sends what is due."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import SecretStr

from catalog.loader import Catalog
from config.settings import Settings
from notifiers.base import Notifier
from notifiers.console import ConsoleNotifier
from notifiers.outbox import collateral_ids, deliver_due, on_saved
from notifiers.pacing import Pacer
from notifiers.pagerduty import ENQUEUE, PagerDutyNotifier
from notifiers.settings import NotifySettings
from notifiers.slack import SlackNotifier
from notifiers.slack_actions import status_blocks
from notifiers.slack_message import Block
from notifiers.webhook import WebhookNotifier
from notifiers.webhook_policy import WebhookPolicy
from store.actions import ActionStore
from store.incidents import Store
from store.ports import NotifyStore, OnSaved


def notify_settings(settings: Settings) -> NotifySettings:
    return NotifySettings(
        base_url=settings.public_url,
        slack_token=SecretStr(settings.slack_token) if settings.slack_token else None,
        slack_api_url=settings.slack_base_url,
        slack_actions=settings.slack_signing_secret is not None,
        pagerduty_url=settings.pagerduty_url.removesuffix(ENQUEUE),
        webhook_secret=SecretStr(settings.webhook_secret) if settings.webhook_secret else None,
        webhook_allow_hosts=webhook_policy(settings).allow_hosts,
        webhook_allow_http_loopback=settings.webhook_allow_http_loopback,
    )


def slack_status(store: NotifyStore) -> Callable[[str], list[Block]] | None:
    """The lines "Acknowledged by …", "Muted until …" of an incident's post, read from the incident store (the
    in-memory store of tests keeps no actions: None)."""
    if not isinstance(store, Store):
        return None
    actions = ActionStore(store)
    return lambda incident_id: status_blocks(actions.actions(incident_id))


def webhook_policy(settings: Settings) -> WebhookPolicy:
    return WebhookPolicy.parse(settings.webhook_allow_hosts, settings.webhook_allow_http_loopback)


def build_notifiers(settings: NotifySettings, slack_status: Callable[[str], list[Block]] | None = None
                    ) -> dict[str, Notifier]:
    """Slack when a token is set, else the console (embedded mode); PagerDuty always; webhooks with a secret
    (without one, webhook deliveries fail with that reason rather than go out unsigned)."""
    made: dict[str, Notifier] = {"pagerduty": PagerDutyNotifier(settings)}
    made["slack"] = SlackNotifier(settings, status=slack_status) if settings.slack_token else ConsoleNotifier(
        sys.stdout, settings.base_url)
    if settings.webhook_secret is not None:
        made["webhook"] = WebhookNotifier(settings)
    return made


def outbox_hook(catalog: Catalog, clock: Callable[[], datetime]) -> OnSaved:
    """Pass as ``Pipeline(..., on_saved=outbox_hook(matcher.catalog, clock))``."""
    return on_saved(clock, collateral_ids(catalog))


@dataclass
class Deliverer:
    """What a worker (Celery task, embedded loop, ``firstfault deliver``) holds between runs."""

    store: NotifyStore
    notifiers: dict[str, Notifier]
    pacer: Pacer = field(default_factory=Pacer)

    @classmethod
    def from_settings(cls, settings: Settings, store: NotifyStore) -> Deliverer:
        ns = notify_settings(settings)
        status = slack_status(store) if ns.slack_actions else None
        return cls(store, build_notifiers(ns, status), Pacer(ns.slack_per_second, ns.slack_burst))

    def run(self, now: datetime, limit: int = 50) -> list[tuple[int, str]]:
        return deliver_due(self.store, self.notifiers, now, self.pacer, limit)

    def next_due(self) -> datetime | None:
        """When the next waiting delivery is due (to schedule the next run), or None."""
        with self.store.notify() as tx:
            return tx.next_attempt()

    def close(self) -> None:
        for notifier in self.notifiers.values():
            notifier.close()
