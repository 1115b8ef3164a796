from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import SecretStr

from notifiers.settings import NotifySettings
from schemas.diagnosis import CollateralGroup, Diagnosis, Evidence, RootCause, TimelineEntry
from schemas.incident import Incident, incident_id
from tests.fakes.pagerduty_api import FakePagerDuty
from tests.fakes.slack_api import FakeSlack
from tests.fakes.webhook_receiver import FakeWebhookReceiver

T0 = datetime(2026, 11, 29, 10, 13, 2, tzinfo=UTC)
SLACK_TOKEN = "xoxb-test-token"
ROUTING_KEY = "R" * 32
WEBHOOK_SECRET = "whsec-test-only"


def oom_diagnosis(evidence: list[str] | None = None) -> Diagnosis:
    lines = evidence if evidence is not None else [
        "[Sun Nov 29 10:14:45 2026] Out of memory: Killed process 31844 (python) total-vm:812345kB",
        "[Sun Nov 29 10:14:45 2026] oom_reaper: reaped process 31844 (python), now anon-rss:0kB",
    ]
    return Diagnosis(
        verdict="diagnosed",
        root_cause=RootCause(
            signature="host.oom_killer", title="Linux OOM killer killed a process: the host ran out of RAM",
            category="memory", tags=["host", "memory", "oom"], rank=37, host="node004", confidence=0.87,
            time=T0, evidence=[Evidence(source="node004/dmesg.log", line=i + 3, text=t) for i, t in enumerate(lines)],
            explanation=["rank 37 (node004): initiating `host.oom_killer` at node004/dmesg.log:3 (+3.9)",
                         "63 other rank(s)/host(s) show only consequences: their catalog role is collateral"]),
        collateral=[CollateralGroup(signature="pytorch.c10d.watchdog_timeout", ranks=[*range(37), *range(38, 64)],
                                    hosts=[f"node00{i}" for i in range(8)], count=63)],
        fix="Reduce host memory: fewer DataLoader workers or smaller prefetch, memory-mapped datasets.",
        verification="dmesg -T | grep -c 'Out of memory: Killed process'  # expect no new lines",
        timeline=[TimelineEntry(time=T0, rank=37, host="node004", signature="host.oom_killer", role="initiating")],
    )


def make_incident(**overrides: Any) -> Incident:
    job = overrides.pop("job_id", "train-llama-70b-4821")
    fields: dict[str, Any] = {
        "id": incident_id(job), "job_id": job, "cluster": "h100-east", "team": "pretrain",
        "labels": {"project": "llama", "env": "prod"}, "created_at": T0, "updated_at": T0,
        "diagnosis": oom_diagnosis(overrides.pop("evidence", None)),
    }
    fields.update(overrides)
    return Incident(**fields)


@pytest.fixture
def incident() -> Incident:
    return make_incident()


@pytest.fixture
def slack_server() -> Iterator[FakeSlack]:
    server = FakeSlack(tokens={SLACK_TOKEN}).start()
    yield server
    server.stop()


@pytest.fixture
def pagerduty_server() -> Iterator[FakePagerDuty]:
    server = FakePagerDuty(routing_keys={ROUTING_KEY}).start()
    yield server
    server.stop()


@pytest.fixture
def webhook_server() -> Iterator[FakeWebhookReceiver]:
    server = FakeWebhookReceiver(WEBHOOK_SECRET).start()
    yield server
    server.stop()


def settings_for(slack: FakeSlack | None = None, pagerduty: FakePagerDuty | None = None,
                 token: str = SLACK_TOKEN, secret: str = WEBHOOK_SECRET) -> NotifySettings:
    return NotifySettings(
        base_url="https://firstfault.example.org", slack_token=SecretStr(token),
        slack_api_url=slack.url if slack else "http://127.0.0.1:9/api/",
        pagerduty_url=pagerduty.base if pagerduty else "http://127.0.0.1:9",
        webhook_secret=SecretStr(secret), webhook_allow_http_loopback=True, timeout_s=5)


def wired_pipeline(store: Any, slack: FakeSlack, pagerduty: FakePagerDuty, slack_actions: bool = False
                   ) -> tuple[Any, Any, dict[str, Any]]:
    """A Pipeline on `store` whose incident changes write the outbox, a manual clock, and real notifiers aimed at
    the fake Slack and PagerDuty (with `slack_actions`, posts that carry the buttons and what people did).
    Callers close the notifiers and the store."""
    from notifiers.pagerduty import PagerDutyNotifier
    from notifiers.slack import SlackNotifier
    from notifiers.wiring import outbox_hook, slack_status
    from pipeline.service import Pipeline
    from scan.engine import default_matcher
    from schemas.clock import ManualClock
    from tests.pipeline.helpers import RecordingScheduler

    clock = ManualClock()
    matcher = default_matcher()
    pipe = Pipeline(store, matcher, RecordingScheduler(), clock, on_saved=outbox_hook(matcher.catalog, clock))
    settings = settings_for(slack, pagerduty).model_copy(update={"slack_actions": slack_actions})
    status = slack_status(store) if slack_actions else None
    return pipe, clock, {"slack": SlackNotifier(settings, status=status), "pagerduty": PagerDutyNotifier(settings)}
