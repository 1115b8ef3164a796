"""Prometheus metrics of the service (docs/operations.md, "Metrics and health"; deploy/grafana/ queries them).

One process-wide registry (prometheus_client's default): `serve` exposes it on /metrics, a Celery worker on its own
port (workers/metrics.py). The pure core (schemas, catalog, correlator) never imports this module; the stages
around it (HTTP and Kafka ingest, the pipeline, the outbox) record here. Labels are bounded sets (kinds, reasons
by class, statuses), never a job id or a free-text reason, so a scrape stays small whatever the traffic.

Gauges read from the database (outbox depth, dead letters kept, correlations pending) are computed at scrape time
by `watch_store`: every serve replica reports the same figure, so a dashboard takes their max, not their sum.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

# seconds: a scan of one shard takes milliseconds, a correlation of a big job seconds; posts wait group_wait (30 s)
SCAN_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CORRELATE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
WAIT_BUCKETS = (1.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 300.0, 600.0, 1800.0)

INGEST_ACCEPTED = Counter("firstfault_ingest_accepted", "Messages handed on to the pipeline",
                          ["kind", "via"])  # kind: job | shard; via: http | kafka
INGEST_REJECTED = Counter("firstfault_ingest_rejected", "Messages refused at the edge, by reason class",
                          ["kind", "via", "reason"])  # reason: invalid | too_large | unauthorized | backpressure
INGEST_BYTES = Counter("firstfault_ingest_shard_bytes", "Bytes of shard data handed on (as sent, encoded)", ["via"])
SHARDS_SCANNED = Counter("firstfault_shards_scanned", "Shards scanned by the pipeline",
                         ["outcome"])  # stored | redelivery
SCAN_SECONDS = Histogram("firstfault_scan_seconds", "Scanning and storing one shard", buckets=SCAN_BUCKETS)
CORRELATE_SECONDS = Histogram("firstfault_correlate_seconds", "One correlation: merge, diagnose, save",
                              buckets=CORRELATE_BUCKETS)
INCIDENTS_SAVED = Counter("firstfault_incidents_saved", "Incidents created or revised", ["change"])  # created | revised
FAILURE_TO_INCIDENT = Histogram("firstfault_failure_to_incident_seconds",
                                "From a job's failure event arriving to its first incident being saved",
                                buckets=WAIT_BUCKETS)
INCIDENT_TO_POST = Histogram("firstfault_incident_to_post_seconds",
                             "From an incident's creation to its first notification sent, by destination kind",
                             ["kind"], buckets=WAIT_BUCKETS)
NOTIFICATIONS = Counter("firstfault_notifications", "Delivery attempts by destination kind and outcome",
                        ["kind", "outcome"])  # outcome: sent | pending (retry) | failed | suppressed | lost-claim ...
DEAD_LETTERS = Counter("firstfault_dead_letters", "Messages or tasks dead-lettered by this process", ["where"])
CONSUMER_LAG = Gauge("firstfault_consumer_lag", "Kafka messages not yet consumed (high watermark - position)",
                     ["topic", "partition"], multiprocess_mode="max")
EMBEDDED_QUEUE = Gauge("firstfault_embedded_queue_depth", "Embedded mode: messages waiting in the in-process queue",
                       multiprocess_mode="max")

Depths = Callable[[], dict[str, dict[str, int]]]


class _StoreGauges(Collector):
    """Reads the store's depths at scrape time; a failing read yields no samples (the /readyz probe says why)."""

    def __init__(self) -> None:
        self.read: Depths | None = None

    def collect(self) -> Iterator[Metric]:
        if self.read is None:
            return
        try:
            depths = self.read()
        except Exception as exc:  # an unreachable database must not make the scrape itself fail
            log.warning("metrics: cannot read the store's depths: %s", exc)
            return
        yield _family("firstfault_outbox_rows", "Notification outbox rows not yet final, by status", "status",
                      depths.get("outbox", {}).items())
        yield _family("firstfault_dead_letters_kept", "Dead letters kept in the store, not replayed, by kind", "kind",
                      depths.get("dead_letters", {}).items())
        pending = GaugeMetricFamily("firstfault_correlations_pending", "Jobs with a correlation scheduled")
        pending.add_metric([], depths.get("correlations", {}).get("pending", 0))
        yield pending


def _family(name: str, doc: str, label: str, samples: Iterable[tuple[str, int]]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for value, count in samples:
        family.add_metric([value], count)
    return family


_STORE_GAUGES = _StoreGauges()
REGISTRY.register(_STORE_GAUGES)


def watch_store(read: Depths) -> None:
    """Report `read()`'s depths on every scrape of this process (the last store watched wins)."""
    _STORE_GAUGES.read = read


def rejected(kind: str, via: str, reason: str) -> None:
    INGEST_REJECTED.labels(kind, via, reason).inc()


def accepted(kind: str, via: str, data_bytes: int = 0) -> None:
    INGEST_ACCEPTED.labels(kind, via).inc()
    if data_bytes:
        INGEST_BYTES.labels(via).inc(data_bytes)


def notified(kind: str, outcome: str) -> None:
    NOTIFICATIONS.labels(kind, outcome).inc()


def scrape(registry: Any = REGISTRY) -> bytes:
    from prometheus_client import generate_latest

    return generate_latest(registry)
