"""No planted secret leaves firstfault: two jobs whose logs print Slack, AWS, GitHub, Hugging Face and W&B
credentials, passwords in URLs and arguments and a private key (tests/fixtures/planted_secrets.py), diagnosed
through every output a user or a third party sees.

Every test runs twice: with redaction, nothing may leak; with the rules emptied, the same output must give
secrets away. The second run proves each output really carries the planted lines, so a pass means redaction
worked, not that the output never showed the log text in the first place.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

import correlator.redact
from api.app import create_app
from config.settings import Settings
from notifiers.outbox import deliver_due
from notifiers.webhook import WebhookNotifier
from pipeline.embedded import EmbeddedRunner
from schemas.subscription import Match, Subscription, Target
from store.incidents import Store
from tests.api.server import serving
from tests.fakes.pagerduty_api import FakePagerDuty
from tests.fakes.slack_api import FakeSlack
from tests.fakes.webhook_receiver import FakeWebhookReceiver
from tests.fixtures.planted_secrets import ALL, leaks, write_jobs
from tests.notifiers.conftest import ROUTING_KEY, settings_for, wired_pipeline
from tests.pipeline.helpers import failed_job, shards_of

ROOT = Path(__file__).resolve().parents[2]
JOBS = ("cause", "uncatalogued")


@pytest.fixture(params=[True, False], ids=["redacted", "rules-off"])
def redacting(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if not request.param:
        monkeypatch.setattr(correlator.redact, "_RULES", ())
    return bool(request.param)


def check(output: str, what: str, redacting: bool) -> None:
    if redacting:
        assert leaks(output) == [], f"{what} leaks {leaks(output)}"
    else:
        assert leaks(output), f"{what} shows none of the planted lines: this check could not fail"


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_jobs(tmp_path_factory.mktemp("planted"))


def test_the_unredacted_diagnosis_shows_every_planted_secret(jobs: dict[str, Path]) -> None:
    """The corpus is planted where a diagnosis looks: without the rules each job gives away every kind."""
    from correlator.diagnose import diagnose
    from scan.engine import default_matcher, scan_sources
    from sources.files import expand

    matcher = default_matcher()
    rules, correlator.redact._RULES = correlator.redact._RULES, ()  # type: ignore[assignment]
    try:
        for name in JOBS:
            scan = scan_sources(matcher, expand([str(jobs[name])]), 2026)
            assert sorted(leaks(diagnose(scan.results, matcher.catalog).model_dump_json())) == sorted(
                s.kind for s in ALL), name
    finally:
        correlator.redact._RULES = rules


FORMATS = ("json", "markdown", "text")
# the three formats of one job in one process (start-up is most of a run's time), separated by a marker
CLI = f"""import sys, correlator.redact as r
if sys.argv[1] == "off":
    r._RULES = ()
from firstfault.cli import main
for fmt in {FORMATS!r}:
    assert main(["diagnose", sys.argv[2], "--format", fmt]) == 0
    print("\\n@@@", flush=True)
"""


@pytest.mark.parametrize("job", JOBS)
def test_firstfault_diagnose_prints_no_secret_in_any_format(jobs: dict[str, Path], job: str, redacting: bool) -> None:
    done = subprocess.run([sys.executable, "-c", CLI, "on" if redacting else "off", str(jobs[job])],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    outputs = done.stdout.split("\n@@@\n")[:3]
    assert len(outputs) == 3 and all(outputs), done.stdout[:500]
    for fmt, out in zip(FORMATS, outputs, strict=True):
        check(out, f"diagnose --format {fmt} ({job})", redacting)
    check(done.stderr, "diagnose's stderr", True)


@pytest.fixture
def services() -> Iterator[tuple[FakeSlack, FakePagerDuty, FakeWebhookReceiver]]:
    slack = FakeSlack(tokens={"xoxb-test-token"}).start()
    pagerduty = FakePagerDuty(routing_keys={ROUTING_KEY}).start()
    webhook = FakeWebhookReceiver("whsec-test-only").start()
    yield slack, pagerduty, webhook
    for server in (slack, pagerduty, webhook):
        server.stop()


def test_no_secret_reaches_slack_pagerduty_a_webhook_the_api_or_the_web_pages(
        jobs: dict[str, Path], sqlite_url: str, redacting: bool,
        services: tuple[FakeSlack, FakePagerDuty, FakeWebhookReceiver]) -> None:
    slack, pagerduty, webhook = services
    store = Store.open(sqlite_url)
    pipe, clock, notifiers = wired_pipeline(store, slack, pagerduty)
    notifiers["webhook"] = WebhookNotifier(settings_for(slack, pagerduty))
    try:
        with store.notify() as tx:
            tx.add_subscription(Subscription(id="all", team="llm", match=Match(categories=["other"]),
                                             targets=[Target(kind="slack", address="#ml-oncall"),
                                                      Target(kind="pagerduty", address=ROUTING_KEY),
                                                      Target(kind="webhook", address=webhook.url)]), clock.now)
        for name in JOBS:
            pipe.accept_job(failed_job(name, world_size=None))
            for shard in shards_of(name, jobs[name]):
                pipe.accept_shard(shard)
        clock.advance(600)
        incidents = [pipe.correlate(name) for name in JOBS]
        assert all(i is not None for i in incidents)
        deliver_due(store, notifiers, clock.now)
        for server, what in ((slack, "the Slack posts"), (pagerduty, "the PagerDuty events"),
                             (webhook, "the webhook bodies")):
            bodies = [r.body.decode() for r in server.requests]
            assert len(bodies) >= 2, f"{what}: {len(bodies)} requests"  # one per job at least
            check("\n".join(bodies), what, redacting)

        app = create_app(Settings(database_url=sqlite_url, api_token="t0ken-for-writes"), EmbeddedRunner(), store)
        app.state.clock = lambda: datetime(2026, 12, 10, tzinfo=UTC)
        with serving(app) as url, httpx.Client(base_url=url, timeout=30) as client:
            pages = {"/v1/incidents": client.get("/v1/incidents"), "/incidents": client.get("/incidents")}
            for incident in incidents:
                assert incident is not None
                for path in (f"/v1/incidents/{incident.id}", f"/incidents/{incident.id}"):
                    pages[path] = client.get(path)
            for path, r in pages.items():
                assert r.status_code == 200, (path, r.text[:300])
            api = "\n".join(r.text for p, r in pages.items() if p.startswith("/v1/incidents/"))
            web = "\n".join(r.text for p, r in pages.items() if p.startswith("/incidents/"))
            check(api, "the API's incident JSON", redacting)
            check(web, "the incident pages", redacting)
            if redacting:  # lists show titles and hosts only, but must not leak either
                check(pages["/v1/incidents"].text + pages["/incidents"].text, "the incident lists", True)
            # the stored JSON is what the API searches: a secret must not find the incident it came from
            found = client.get("/v1/incidents", params={"q": ALL[0].value[5:20]}).json()
            assert found["items"] == [] if redacting else found["items"], json.dumps(found)[:300]
    finally:
        for n in notifiers.values():
            n.close()
        store.close()
