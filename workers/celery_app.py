"""The Celery app, built from Settings (Redis broker by default). `celery -A workers.app` runs the one the
environment configures (workers/app.py); serve, tests and benches build theirs here from their own Settings.

acks_late + reject_on_worker_lost: a task whose worker dies is delivered again, and every task is idempotent,
so a redelivery never duplicates anything. Redis redelivers an unacknowledged task after visibility_timeout,
which must exceed the longest countdown we schedule (group_wait), or a waiting task would loop.
"""

from __future__ import annotations

from celery import Celery

from config.settings import Settings, load_settings

UNACKED_MUTEX_EXPIRE_S = 15
DELIVER_EVERY_S = 2.0  # beat's firstfault.deliver; an incident change also sends one at once


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
        # what `celery -A workers.app beat` runs: the sweep of lost work (workers/tasks.py) and the outbox
        beat_schedule={
            "firstfault-sweep": {"task": "firstfault.sweep", "schedule": s.sweep_every_s,
                                 "options": {"expires": s.sweep_every_s * 2}},
            "firstfault-deliver": {"task": "firstfault.deliver", "schedule": DELIVER_EVERY_S,
                                   "options": {"expires": DELIVER_EVERY_S * 5}},
        },
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
