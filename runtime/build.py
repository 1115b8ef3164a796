"""The Pipeline as every process runs it: the default matcher, the outbox written with each incident change, the
waits from Settings. `firstfault serve` builds it for the embedded mode, each Celery worker for its tasks."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from schemas.clock import Clock, system_clock

if TYPE_CHECKING:
    from config.settings import Settings
    from pipeline.scanpool import ScanPool
    from pipeline.service import Pipeline, Scheduler
    from store.incidents import OnSaved, Store


def pipeline_for(settings: Settings, store: Store, scheduler: Scheduler, on_saved: OnSaved | None = None,
                 clock: Clock = system_clock) -> Pipeline:
    """The scheduler should read the same clock (EmbeddedRunner(clock=...), CeleryScheduler(app, clock))."""
    # imported here: the CLI's parsers import this module's callers, and `diagnose` never builds a Pipeline
    from notifiers.wiring import outbox_hook
    from pipeline.service import Pipeline
    from scan.engine import default_matcher

    matcher = default_matcher()
    if on_saved is None:  # every incident change writes its notifications in the same transaction
        on_saved = outbox_hook(matcher.catalog, clock)
    return Pipeline(store, matcher, scheduler, clock,
                    group_wait=timedelta(seconds=settings.group_wait_s),
                    revise_wait=timedelta(seconds=settings.revise_wait_s), on_saved=on_saved)


def scan_pool_for(settings: Settings) -> ScanPool | None:
    """The embedded runner's scan processes (settings.scan_workers; by default one per usable core, none on one
    core or where no fork server can start them), each building the matcher `pipeline_for` scans with."""
    import os

    from pipeline.scanpool import ScanPool, usable
    from scan.engine import default_matcher

    workers = settings.scan_workers
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        workers = workers if workers > 1 else 0
    return ScanPool(workers, default_matcher) if workers > 0 and usable() else None
