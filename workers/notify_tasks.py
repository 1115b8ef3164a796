"""The thin delivery task: send the notifications that are due (notifiers/outbox.py does the work).

Celery beat runs it every DELIVER_EVERY_S seconds (workers/celery_app.py's schedule); ``deliver.delay()`` after an
incident change makes the first post immediate. Many workers may run it at once: rows are claimed with
FOR UPDATE SKIP LOCKED. A 429 never sleeps here: the row is rescheduled at Retry-After.
"""

from __future__ import annotations

from functools import cache

from celery import Task, shared_task

from notifiers.wiring import Deliverer
from schemas.clock import system_clock

TASK: dict[str, object] = {"ignore_result": True}  # a failed row is recorded on the row; the task never retries


@cache
def deliverer() -> Deliverer:
    """One per worker process (after the fork): its notifiers and its per-channel pacing."""
    from config.settings import load_settings
    from store.incidents import Store

    settings = load_settings()
    return Deliverer.from_settings(settings, Store.open(settings.database_url))


@shared_task(name="firstfault.deliver", bind=True, **TASK)  # type: ignore[untyped-decorator]
def deliver(self: Task) -> int:
    """Returns how many deliveries were attempted. Errors are per row (recorded there), never the task's."""
    return len(deliverer().run(system_clock()))
