"""The deliver task in a real Celery worker process (local Redis, PostgreSQL) posting to the fake Slack."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from config.settings import load_settings
from notifiers.outbox import on_saved
from schemas.subscription import Match, Subscription, Target
from store.incidents import Store
from tests.conftest import BROKER
from tests.fakes.slack_api import FakeSlack
from tests.integration.celery_worker import Worker, service_env, wait_for
from tests.notifiers.conftest import SLACK_TOKEN, make_incident
from tests.pipeline.helpers import failed_job
from workers.celery_app import make_app

pytestmark = pytest.mark.integration


def test_a_celery_worker_delivers_the_outbox_once(fresh_pg_url: str, broker_prefix: str, slack_server: FakeSlack,
                                                  tmp_path: Path) -> None:
    store = Store.open(fresh_pg_url)
    now = datetime.now(UTC)
    with store.notify() as tx:
        tx.add_subscription(Subscription(id="s1", team="pretrain", match=Match(tags=["oom"]),
                                         targets=[Target(kind="slack", address="#ml-oncall")]), now)
    incident = make_incident()
    store.record_job(failed_job(incident.job_id), now)
    store.save_incident(incident.job_id, lambda cur: incident, on_saved(lambda: now))
    queue = f"{broker_prefix}firstfault"
    env = service_env(fresh_pg_url, BROKER, FIRSTFAULT_SLACK_TOKEN=SLACK_TOKEN, FIRSTFAULT_BROKER_PREFIX=broker_prefix,
                      FIRSTFAULT_QUEUE=queue, FIRSTFAULT_SLACK_BASE_URL=slack_server.url)
    worker = Worker(env, tmp_path / "worker.log")
    app = make_app(load_settings(env))
    try:
        app.send_task("firstfault.deliver", queue=queue)
        app.send_task("firstfault.deliver", queue=queue)  # twice, as beat and a nudge might
        log = tmp_path / "worker.log"
        wait_for(lambda: log.read_text().count("] succeeded in") >= 2, 60, "both deliver tasks to finish")
        assert _status(store) == "sent"
    finally:
        worker.stop()
        app.close()
        store.close()
    assert len(slack_server.posts("#ml-oncall")) == 1, (tmp_path / "worker.log").read_text()


def _status(store: Store) -> str:
    from sqlmodel import select

    from store.notify_tables import OutboxRow

    with store.session() as s:
        return s.exec(select(OutboxRow.status)).one()
