"""Shared by the end-to-end notifier tests: a store with the real pipeline and outbox, notifiers aimed at the
fake Slack and PagerDuty, one subscription, and the app served by uvicorn on 127.0.0.1 (test_resolve.py,
test_slack_actions.py), and a failure of 64 ranks (examples/oom-killed-rank37) driven through it; the whole
embedded service as `firstfault serve` builds it, posting to the fake Slack (test_embedded_service.py and
tests/api/test_metrics.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from api.app import create_app
from config.settings import Settings, load_settings
from firstfault.serve import Embedded, build_embedded
from notifiers.base import Notifier
from notifiers.loop import DeliveryLoop
from notifiers.outbox import deliver_due
from notifiers.wiring import Deliverer
from pipeline.embedded import EmbeddedRunner
from pipeline.service import Pipeline
from schemas.clock import ManualClock
from schemas.incident import Incident
from schemas.subscription import Match, Subscription, Target
from store.incidents import Store
from tests.api.server import serving
from tests.fakes.pagerduty_api import FakePagerDuty
from tests.fakes.slack_api import FakeSlack
from tests.notifiers.conftest import SLACK_TOKEN, wired_pipeline
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of


@dataclass
class Served:
    store: Store
    pipe: Pipeline
    clock: ManualClock
    notifiers: dict[str, Notifier]
    http: httpx.Client  # the served app
    slack: FakeSlack
    pagerduty: FakePagerDuty

    def deliver(self) -> None:
        deliver_due(self.store, self.notifiers, self.clock.now)

    def fail(self, job: str, with_dmesg: bool = True, cluster: str = "c1") -> Incident:
        """The job fails, its 64 ranks' logs arrive (without node004's dmesg, the OOM kill, unless `with_dmesg`),
        it correlates 31 s later and the outbox delivers."""
        self.pipe.accept_job(failed_job(job, cluster=cluster))
        for shard in shards_of(job, EXAMPLE):
            if with_dmesg or shard.stream != "dmesg":
                self.pipe.accept_shard(shard)
        self.clock.advance(31)
        incident = self.pipe.correlate(job)
        assert incident is not None
        self.deliver()
        return incident


@contextmanager
def served(db_url: str, slack: FakeSlack, pagerduty: FakePagerDuty, subscription: Subscription,
           slack_actions: bool = False, **settings: Any) -> Iterator[Served]:
    """``settings``: the app's Settings besides its database (tokens, Slack's signing secret)."""
    store = Store.open(db_url)
    pipe, clock, notifiers = wired_pipeline(store, slack, pagerduty, slack_actions)
    try:
        with store.notify() as tx:
            tx.add_subscription(subscription, clock.now)
        app = create_app(Settings(database_url=db_url, **settings), EmbeddedRunner(), store)
        app.state.clock = clock
        with serving(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            yield Served(store, pipe, clock, notifiers, http, slack, pagerduty)
    finally:
        for notifier in notifiers.values():
            notifier.close()
        store.close()


@dataclass
class Running:
    service: Embedded
    url: str  # where its app is served
    slack: FakeSlack


@contextmanager
def embedded_service(sqlite_url: str, **environ: str) -> Iterator[Running]:
    """The embedded service on ``sqlite_url``, correlating 1 s after a job's failure (revising 0.5 s after new
    evidence), its runner and delivery loop running, posting memory failures to the fake Slack's #ml-oncall.
    ``environ``: more FIRSTFAULT_* settings (an API token)."""
    with _fake_slack() as slack:
        settings = load_settings(environ={
            "FIRSTFAULT_DATABASE_URL": sqlite_url, "FIRSTFAULT_GROUP_WAIT_S": "1", "FIRSTFAULT_REVISE_WAIT_S": "0.5",
            "FIRSTFAULT_SLACK_TOKEN": SLACK_TOKEN, "FIRSTFAULT_SLACK_BASE_URL": slack.url, **environ},
            path="/dev/null")
        service = build_embedded(settings)
        with service.store.notify() as tx:
            tx.add_subscription(Subscription(id="s", team="llm", match=Match(categories=["memory"]),
                                             targets=[Target(kind="slack", address="#ml-oncall")]), datetime.now(UTC))
        service.runner.start()
        delivery = DeliveryLoop(Deliverer.from_settings(settings, service.store), interval=0.2).start()
        try:
            with serving(service.app) as url:
                yield Running(service, url, slack)
        finally:
            delivery.stop()
            service.runner.stop()
            service.store.close()


@contextmanager
def _fake_slack() -> Iterator[FakeSlack]:
    server = FakeSlack(tokens={SLACK_TOKEN}).start()
    try:
        yield server
    finally:
        server.stop()
