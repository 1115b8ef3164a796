"""The whole distributed deployment on this machine for bench/faults.py: every piece its own, but PostgreSQL (a
scratch database on the local server, reached through a proxy the harness can cut)."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.fault_rig import (
    PgProxy,
    Service,
    celery,
    free_port,
    make_bucket,
    python_env,
    s3_env,
    tansu_binary,
    wait_port,
)

PG_ADMIN = os.environ.get("FIRSTFAULT_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
CHANNEL = "#ml-oncall"
TOKEN = "xoxb-test-token"
TEAM = "bench"

# Short waits, so a run of a few hundred jobs and nine faults takes minutes; every one is a setting a deployment
# has (config/settings.py). visibility_timeout must exceed group_wait (settings check).
TIMINGS = {"FIRSTFAULT_GROUP_WAIT_S": "5", "FIRSTFAULT_REVISE_WAIT_S": "1", "FIRSTFAULT_VISIBILITY_TIMEOUT_S": "10",
           "FIRSTFAULT_REDELIVERY_CHECK_S": "1", "FIRSTFAULT_SWEEP_EVERY_S": "5", "FIRSTFAULT_SWEEP_GRACE_S": "10"}


class Stack:
    def __init__(self, workers: int = 2, redis_aof: bool = True, keep: bool = False) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="fffaults-"))
        self.keep = keep
        self.n_workers = workers
        self.redis_aof = redis_aof
        self.services: list[Service] = []
        self.db = f"ff_faults_{uuid.uuid4().hex[:8]}"
        self.slack: Any = None
        self.proxy: PgProxy | None = None

    # -- start ---------------------------------------------------------------------------------------------------
    def start(self) -> Stack:
        import psycopg

        from tests.fakes.slack_api import FakeSlack

        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.db}"')
        host, port = PG_ADMIN.split("@", 1)[1].split("/", 1)[0].split(":")
        self.proxy = PgProxy((host, int(port)))
        self.direct_url = PG_ADMIN.rsplit("/", 1)[0] + f"/{self.db}"
        self.db_url = self.direct_url.replace(f"{host}:{port}", f"127.0.0.1:{self.proxy.port}")
        self.slack = FakeSlack().start()

        s3_port, self.kafka_port, self.redis_port = free_port(), free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.kafka_port}"
        self.s3 = self._service("s3", [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p",
                                       str(s3_port)], {}, port=s3_port)
        make_bucket(s3_port, "tansu")
        url = f"tcp://{self.bootstrap}"
        self.tansu = self._service("tansu", [str(tansu_binary()), "broker", "--listener-url", url,
                                             "--advertised-listener-url", url, "--storage-engine", "s3://tansu/"],
                                   s3_env(s3_port), port=self.kafka_port)
        persist = ["--appendonly", "yes", "--appendfsync", "everysec"] if self.redis_aof else ["--appendonly", "no"]
        self.redis = self._service("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port),
                                             "--save", "", "--dir", str(self.tmp), *persist], {},
                                   port=self.redis_port)
        from ingest.kafka import create_topics
        from ingest.topics import DEFAULT_TOPICS

        create_topics(self.bootstrap, DEFAULT_TOPICS, partitions=3)  # 3: a second consumer gets a share
        self.env = python_env({
            "FIRSTFAULT_DATABASE_URL": self.db_url, "FIRSTFAULT_BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "FIRSTFAULT_KAFKA_BOOTSTRAP": self.bootstrap, "FIRSTFAULT_SLACK_TOKEN": TOKEN,
            "FIRSTFAULT_SLACK_BASE_URL": self.slack.url, **TIMINGS})
        self._subscribe()
        self.serve = self._service("serve", self.serve_argv(), self.env)
        self.workers = [self._service(f"worker{i}", celery("worker", "--pool=solo", "-n", f"w{i}@%h", "-Q",
                                                           "firstfault", "--without-gossip", "--without-mingle",
                                                           "--without-heartbeat", "-l", "info"), self.env)
                        for i in range(1, self.n_workers + 1)]
        self.beat = self._service("beat", celery("beat", "-s", str(self.tmp / "beat-schedule"), "-l", "warning"),
                                  self.env)
        deadline = time.monotonic() + 120
        while not all("ready." in w.tail(200) for w in self.workers):
            if time.monotonic() > deadline:
                raise TimeoutError("workers not ready: " + " | ".join(w.tail(5) for w in self.workers))
            time.sleep(0.2)
        return self

    def serve_argv(self) -> list[str]:
        return [sys.executable, "-m", "firstfault.cli", "serve", "--no-http"]

    def _service(self, name: str, argv: list[str], env: dict[str, str], port: int | None = None) -> Service:
        full = {**os.environ, **env} if not env.get("PYTHONPATH") else env
        service = Service(name, argv, full, self.tmp, ready=(lambda: wait_port(port)) if port else None).start()
        self.services.append(service)
        return service

    def _subscribe(self) -> None:
        from datetime import UTC, datetime

        from schemas.subscription import Match, Subscription, Target
        from store.incidents import Store

        store = Store.open(self.direct_url)  # migrates before any worker writes
        with store.notify() as tx:
            tx.add_subscription(Subscription(id="bench-oncall", team=TEAM, match=Match(),
                                             targets=[Target(kind="slack", address=CHANNEL)]), datetime.now(UTC))
        store.close()

    # -- stop ----------------------------------------------------------------------------------------------------
    def close(self) -> None:
        import psycopg

        for service in reversed(self.services):
            service.close()
        if self.slack is not None:
            self.slack.stop()
        if self.proxy is not None:
            self.proxy.close()
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
        if not self.keep:
            import shutil

            shutil.rmtree(self.tmp, ignore_errors=True)

    def restart(self, service: Service, down_s: float, sig: int = signal.SIGKILL) -> None:
        """Killed, down for `down_s`, started again on the same port with the same storage."""
        service.stop(sig)
        time.sleep(down_s)
        service.start()

    def exits(self) -> dict[str, int]:
        """Unplanned exits per service (each one restarted by the supervisor)."""
        return {s.name: len(s.exits) for s in self.services if s.exits}
