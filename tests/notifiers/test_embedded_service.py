"""The whole embedded service: a job shipped over HTTP ingest ends as one post on the (fake) Slack."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from config.settings import load_settings
from firstfault.serve import build_embedded
from notifiers.loop import DeliveryLoop
from notifiers.wiring import Deliverer
from schemas.subscription import Match, Subscription, Target
from tests.api.server import serving
from tests.fakes.slack_api import FakeSlack
from tests.integration.celery_worker import wait_for
from tests.notifiers.conftest import SLACK_TOKEN
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of


def test_a_job_shipped_to_the_embedded_service_is_posted_once(sqlite_url: str, slack_server: FakeSlack) -> None:
    settings = load_settings(environ={
        "FIRSTFAULT_DATABASE_URL": sqlite_url, "FIRSTFAULT_GROUP_WAIT_S": "1", "FIRSTFAULT_REVISE_WAIT_S": "0.5",
        "FIRSTFAULT_SLACK_TOKEN": SLACK_TOKEN, "FIRSTFAULT_SLACK_BASE_URL": slack_server.url}, path="/dev/null")
    service = build_embedded(settings)
    with service.store.notify() as tx:
        tx.add_subscription(Subscription(id="s", team="llm", match=Match(categories=["memory"]),
                                         targets=[Target(kind="slack", address="#ml-oncall")]), datetime.now(UTC))
    service.runner.start()
    delivery = DeliveryLoop(Deliverer.from_settings(settings, service.store), interval=0.2).start()
    try:
        with serving(service.app) as url, httpx.Client(base_url=url, timeout=30) as http:
            http.post("/v1/jobs", json=failed_job("e1").model_dump(mode="json")).raise_for_status()
            for shard in shards_of("e1", EXAMPLE, chunk=32 * 1024):
                http.post("/v1/shards", json=shard.model_dump(mode="json")).raise_for_status()
            wait_for(lambda: slack_server.posts("#ml-oncall"), 60, "the Slack post")
            wait_for(service.runner.idle, 30, "the pipeline to settle")
    finally:
        delivery.stop()
        service.runner.stop()
        service.store.close()
    [post] = slack_server.posts("#ml-oncall")
    assert "rank 37 on node004" in str(post.blocks)
    assert "/incidents/inc-" in str(post.blocks)
