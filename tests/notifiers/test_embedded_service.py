"""The whole embedded service: a job shipped over HTTP ingest ends as one post on the (fake) Slack."""

from __future__ import annotations

import httpx

from tests.integration.celery_worker import wait_for
from tests.notifiers.helpers import embedded_service
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of


def test_a_job_shipped_to_the_embedded_service_is_posted_once(sqlite_url: str) -> None:
    with embedded_service(sqlite_url) as running, httpx.Client(base_url=running.url, timeout=30) as http:
        http.post("/v1/jobs", json=failed_job("e1").model_dump(mode="json")).raise_for_status()
        for shard in shards_of("e1", EXAMPLE, chunk=32 * 1024):
            http.post("/v1/shards", json=shard.model_dump(mode="json")).raise_for_status()
        wait_for(lambda: running.slack.posts("#ml-oncall"), 60, "the Slack post")
        wait_for(running.service.runner.idle, 30, "the pipeline to settle")
    [post] = running.slack.posts("#ml-oncall")  # once stopped: nothing more was posted
    assert "rank 37 on node004" in str(post.blocks)
    assert "/incidents/inc-" in str(post.blocks)
