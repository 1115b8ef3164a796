"""A Redis broker that keeps nothing on disk loses queued jobs in a restart (bench/faults.py: 2 of 40 jobs, 13
shards, with `redis_restart` under a backlog; 0 of 80 with the append-only file). `serve` says so at start, and
the compose file runs Redis with the append-only file. Real redis-server processes on free ports."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.services import free_port, wait_port
from workers.celery_app import broker_keeps_nothing

pytestmark = pytest.mark.integration
COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose" / "docker-compose.yml"


@contextmanager
def redis_server(tmp_path: Path, *args: str) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("no redis-server binary")
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(tmp_path),
                             *args], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_redis_that_keeps_nothing_is_named_and_one_with_an_append_only_file_is_not(tmp_path: Path) -> None:
    with redis_server(tmp_path, "--save", "", "--appendonly", "no") as url:
        problem = broker_keeps_nothing(url)
    assert problem is not None and "appendonly" in problem and "restart loses" in problem
    with redis_server(tmp_path, "--save", "", "--appendonly", "yes") as url:
        assert broker_keeps_nothing(url) is None
    with redis_server(tmp_path, "--save", "60 1", "--appendonly", "no") as url:
        assert broker_keeps_nothing(url) is None  # snapshots: a clean restart keeps the queue
    assert broker_keeps_nothing("amqp://guest@127.0.0.1//") is None


def test_serve_warns_at_start_on_a_broker_that_keeps_nothing(tmp_path: Path, kafka_bootstrap: str,
                                                              fresh_pg_url: str) -> None:
    import sys

    from tests.integration.celery_worker import ROOT, service_env

    with redis_server(tmp_path, "--save", "", "--appendonly", "no") as url:
        env = service_env(fresh_pg_url, url, FIRSTFAULT_KAFKA_BOOTSTRAP=kafka_bootstrap)
        log = tmp_path / "serve.log"
        with log.open("wb") as out:
            serve = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "serve", "--no-http"], cwd=ROOT,
                                     env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                from tests.integration.celery_worker import wait_for

                wait_for(lambda: "consuming" in log.read_text(errors="replace"), 60, "serve consuming")
            finally:
                serve.terminate()
                serve.wait(timeout=30)
    assert "keeps nothing on disk" in log.read_text(errors="replace")


def test_the_compose_file_runs_redis_with_an_append_only_file() -> None:
    import yaml

    command = yaml.safe_load(COMPOSE.read_text())["services"]["redis"]["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
