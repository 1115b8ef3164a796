"""The Celery app (Redis broker by default): `celery -A workers.app worker`.

acks_late + reject_on_worker_lost: a task whose worker dies is delivered again, and every task is idempotent,
so a redelivery never duplicates anything. Redis redelivers an unacknowledged task after visibility_timeout,
which must exceed the longest countdown we schedule (group_wait), or a waiting task would loop.
"""

from __future__ import annotations

from celery import Celery
from celery.signals import setup_logging

from config.settings import Settings, load_settings
from pipeline import logs
from workers.metrics import connect as connect_metrics

UNACKED_MUTEX_EXPIRE_S = 15


def make_app(settings: Settings | None = None) -> Celery:
    s = settings or load_settings()
    app = Celery("firstfault", broker=s.broker_url, include=["workers.tasks", "workers.notify_tasks"])
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_default_queue=s.queue,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": s.visibility_timeout_s,
            # kombu looks for a dead worker's unacknowledged tasks every interval times throttle seconds (100 s by
            # default); look every interval instead, so a crash costs visibility_timeout plus seconds
            "unacked_restore_interval": s.redelivery_check_s,
            "unacked_restore_throttle": 1,
            # the sweep runs under a Redis lock that outlives a worker killed inside it (300 s by default, which
            # would hold every redelivery back that long); a sweep takes milliseconds, so a short lock is enough
            # (two overlapping sweeps are harmless: kombu restores a task in a transaction, at most once)
            "unacked_mutex_expire": UNACKED_MUTEX_EXPIRE_S,
            **({"global_keyprefix": s.broker_prefix} if s.broker_prefix else {}),
        },
        worker_hijack_root_logger=False,
    )
    return app


def broker_keeps_nothing(broker_url: str) -> str | None:
    """Why a Redis broker would lose every queued task in a restart (no append-only file, no snapshots), or None.

    Kafka offsets are committed once a task is on the broker, so a Redis that keeps nothing on disk loses the
    queued work for good when it restarts: bench/faults.py lost 2 of 40 jobs and 13 shards that way, 0 with
    `appendonly yes`. None also when the server does not say (CONFIG refused, as on some managed Redis) or the
    broker is not Redis."""
    if not broker_url.startswith(("redis://", "rediss://")):
        return None
    import redis

    client = redis.Redis.from_url(broker_url, socket_timeout=5, socket_connect_timeout=5)
    try:
        appendonly = client.config_get("appendonly").get("appendonly")
        save = client.config_get("save").get("save")
    except redis.RedisError:
        return None
    finally:
        client.close()
    if appendonly == "no" and save == "":
        return ("the Celery broker (Redis) keeps nothing on disk (appendonly no, save \"\"): a Redis restart loses "
                "every queued task, and the jobs whose tasks they were; run it with --appendonly yes")
    return None


_settings = load_settings()


def _configure_logging(**_: object) -> None:
    """The worker logs as serve does (text or JSON lines with the trace id): a receiver here stops Celery from
    installing its own handlers."""
    logs.configure(_settings.log_format, _settings.log_level)


setup_logging.connect(_configure_logging, weak=False)


app = make_app(_settings)
connect_metrics(_settings)  # the worker process's own app only: a /metrics server when configured
