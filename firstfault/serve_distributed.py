"""`firstfault serve` without --embedded: the Kafka consumer and the HTTP ingest, each handing what it validated to
Celery through one StoringDispatcher (a job event stored here, a shard's packed bytes stored and its task sent
by reference). Workers run apart: `celery -A workers.app worker -Q <queue>`."""

from __future__ import annotations

import logging
import threading

from api.app import create_app
from config.settings import Settings
from ingest.consumer import kafka_ingest, stop_on_signals
from ingest.kafka import create_topics
from ingest.topics import DEFAULT_TOPICS
from runtime.build import pipeline_for
from runtime.health import DISTRIBUTED
from schemas.errors import UsageError
from store.dead_letters import keep_message
from store.incidents import Store
from workers.celery_app import broker_keeps_nothing, make_app
from workers.dispatch import CeleryScheduler, StoringDispatcher

log = logging.getLogger("firstfault.serve")


def _http(settings: Settings, dispatcher: StoringDispatcher, store: Store, host: str, port: int) -> threading.Thread:
    import uvicorn

    # straight to the workers, as the consumer hands on: through Kafka too, the shard would be validated once more
    # by the consumer, and cross one more broker whole
    app = create_app(settings, dispatcher, store, needs=DISTRIBUTED, catalog=dispatcher.pipeline.matcher.catalog)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info", log_config=None))
    thread = threading.Thread(target=server.run, name="firstfault-http", daemon=True)
    thread.start()
    return thread


def run_distributed(settings: Settings, host: str, port: int, http: bool = True) -> int:
    bootstrap = settings.kafka_bootstrap
    if not bootstrap:
        raise UsageError("distributed serve needs FIRSTFAULT_KAFKA_BOOTSTRAP (or run `firstfault serve --embedded`)")
    create_topics(bootstrap, DEFAULT_TOPICS)
    problem = broker_keeps_nothing(settings.broker_url)
    if problem:
        log.warning("%s", problem)
    store = Store.open(settings.database_url)  # migrates the schema once, before any worker writes
    app = make_app(settings)
    dispatcher = StoringDispatcher(app, pipeline_for(settings, store, CeleryScheduler(app)))
    loop = kafka_ingest(bootstrap, dispatcher, DEFAULT_TOPICS, settings.kafka_group,
                        also=lambda letter: keep_message(store, letter))
    stop = threading.Event()
    stop_on_signals(stop)
    if http:
        _http(settings, dispatcher, store, host, port)
    log.info("consuming %s and %s from %s", DEFAULT_TOPICS.jobs, DEFAULT_TOPICS.shards, bootstrap)
    try:
        loop.run(stop)
    finally:
        loop.close()
        store.close()
    return 0
