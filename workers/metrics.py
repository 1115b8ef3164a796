"""A Celery worker's Prometheus metrics: `FIRSTFAULT_WORKER_METRICS_PORT=9464 celery -A workers.app worker`.

The tasks run in prefork children, each with its own counters, so one HTTP server in the parent cannot read them
from its own memory. prometheus_client's multiprocess mode is the fix: with PROMETHEUS_MULTIPROC_DIR set (before
the worker starts; an emptyDir in deploy/k8s), every process writes its samples to files there and the parent's
server sums them on a scrape. Without the directory the worker refuses to serve metrics rather than serve zeros.
(The alternative, a server per child on port+N, makes Prometheus discover N targets per pod.)
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from celery.signals import worker_init, worker_process_shutdown

from config.settings import Settings

log = logging.getLogger(__name__)


def serve_metrics(settings: Settings) -> int | None:
    """Start the worker's /metrics server if configured; its port, or None."""
    port = settings.worker_metrics_port
    if port is None:
        return None
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not folder:
        log.error("worker metrics: set PROMETHEUS_MULTIPROC_DIR (an empty, writable directory) with "
                  "FIRSTFAULT_WORKER_METRICS_PORT; not serving metrics")
        return None
    for stale in Path(folder).glob("*.db"):  # a previous worker's samples would be summed with ours
        stale.unlink()
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
    start_http_server(port, addr=settings.worker_metrics_host, registry=registry)
    log.info("worker metrics on %s:%d/metrics (from %s)", settings.worker_metrics_host, port, folder)
    return port


def connect(settings: Settings) -> None:
    def started(**_: Any) -> None:
        serve_metrics(settings)

    def child_exit(**_: Any) -> None:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    worker_init.connect(started, weak=False)
    worker_process_shutdown.connect(child_exit, weak=False)
