"""Readiness: can this process reach what it needs? `/readyz` (api/app.py) answers 503 naming what failed.

The embedded mode needs only its database; the distributed `serve` also hands messages to Kafka (HTTP ingest
produces there, the consumer reads there) and to Celery's Redis. The checks run side by side and the answer comes
within 4 s, so a probe with a few seconds' timeout hears which dependency is slow rather than timing out itself.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Mapping

from config.settings import Settings
from store.gauges import ping
from store.incidents import Store

TIMEOUT_S = 2.0
EMBEDDED = ("database",)
DISTRIBUTED = ("database", "redis", "kafka")

Check = Callable[[], None]


def _database(store: Store) -> Check:
    return lambda: ping(store)


def _redis(url: str) -> Check:
    def check() -> None:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        try:
            client.ping()
        finally:
            client.close()
    return check


def _kafka(bootstrap: str | None) -> Check:
    """A TCP connection to one of the bootstrap servers: cheap, and what fails when the broker is down. (A
    metadata request would cost a client per probe; the consumer's own errors show in its logs and lag.)"""
    def check() -> None:
        if not bootstrap:
            raise ConnectionError("FIRSTFAULT_KAFKA_BOOTSTRAP is not set")
        errors = []
        for server in bootstrap.split(","):
            host, _, port = server.strip().rpartition(":")
            try:
                socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=TIMEOUT_S).close()
                return
            except (OSError, ValueError) as exc:
                errors.append(f"{server.strip()}: {exc}")
        raise ConnectionError("; ".join(errors))
    return check


def checks(settings: Settings, store: Store, needs: tuple[str, ...]) -> dict[str, Check]:
    every = {"database": _database(store), "redis": _redis(settings.broker_url),
             "kafka": _kafka(settings.kafka_bootstrap)}
    return {name: every[name] for name in needs}


def readiness(named: Mapping[str, Check], timeout_s: float = 2 * TIMEOUT_S) -> dict[str, str]:
    """{dependency: "ok" or why not}, within `timeout_s` whatever the dependencies do: the checks run at once, each
    in a daemon thread, and one still running at the deadline is reported as not answering (a PostgreSQL host that
    drops packets holds a connection attempt for minutes; the thread is left to finish on its own)."""
    out: dict[str, str] = {}

    def run(name: str, check: Check) -> None:
        try:
            check()
            out[name] = "ok"
        except Exception as exc:  # any failure is the answer: the probe reports it, it never raises
            out[name] = f"{type(exc).__name__}: {exc}"[:300]

    threads = [threading.Thread(target=run, args=item, daemon=True, name=f"readyz-{item[0]}")
               for item in named.items()]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return {name: out.get(name, f"no answer within {timeout_s:g} s") for name in named}
