"""deploy/compose/docker-compose.yml run on this machine's own services (no Docker engine here): the migration
once, then `serve`, the worker replicas and beat, each with the command and environment the compose file gives it
(tests/deploy/compose_local.py says what is rewritten: hostnames, the host port, the fake Slack's address, a
Redis key prefix). The test waits on the health check the compose file declares, then one failed job goes in over
HTTP with the API token and comes out as one incident in PostgreSQL and one post in Slack (the fake, through the
real slack-sdk client). A wrong module path, option or variable in the compose file fails it."""

from __future__ import annotations

import gzip
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis
import sqlalchemy as sa

from store.db import make_engine
from tests.conftest import BROKER
from tests.deploy import compose_local
from tests.deploy.compose_local import Local
from tests.fakes.slack_api import FakeSlack
from tests.integration.conftest import kafka_bootstrap  # noqa: F401  (imported here: a broker of this module's own)
from tests.notifiers.conftest import SLACK_TOKEN

pytestmark = pytest.mark.integration

LIMIT_S = 60  # a broken topology fails here rather than hanging; nothing asserts on time
RANK_LOGS = {  # rank 1 runs out of GPU memory; rank 0 waits for it in the next collective
    0: "[rank0]:[E1203 10:14:50.101 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
       "WorkNCCL(SeqNum=241, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for "
       "600041 milliseconds before timing out.\n",
    1: "step 240 loss 2.113\n[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 "
       "has a total capacity of 79.10 GiB of which 1.06 GiB is free.\n",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Processes:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.running: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self.tmp / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(command, cwd=self.tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.running.append((name, proc))
        return proc

    def check_alive(self) -> None:
        for name, proc in self.running:
            if proc.poll() is not None:
                pytest.fail(f"compose service {name} exited with {proc.returncode}: {self.log(name)}")

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        for _, proc in self.running:
            proc.terminate()
        for _, proc in self.running:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


@dataclass
class Topology:
    url: str
    token: str
    slack: FakeSlack
    database_url: str
    processes: Processes


def _wait(what: str, processes: Processes, check: object) -> object:
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        processes.check_alive()
        value = check()  # type: ignore[operator]
        if value:
            return value
        time.sleep(0.3)
    pytest.fail(f"timed out after {LIMIT_S} s waiting for {what}")


@pytest.fixture
def topology(fresh_pg_url: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[Topology]:  # noqa: F811
    services = compose_local.load()
    token, prefix, port = uuid.uuid4().hex, f"ffcompose-{uuid.uuid4().hex[:8]}-", _free_port()
    local = Local(kafka=kafka_bootstrap, redis="127.0.0.1:6379", database_url=fresh_pg_url)
    secrets = {"FIRSTFAULT_API_TOKEN": token, "FIRSTFAULT_SLACK_TOKEN": SLACK_TOKEN}
    slack = FakeSlack(tokens={SLACK_TOKEN}).start()
    extra = {"FIRSTFAULT_HTTP_PORT": str(port),  # compose maps the host's 8321; other tests may hold that one
             "FIRSTFAULT_SLACK_BASE_URL": slack.url, "FIRSTFAULT_BROKER_PREFIX": prefix}
    processes = Processes(tmp_path)

    def env(name: str) -> dict[str, str]:
        return compose_local.environment(services[name], local, secrets, extra)

    try:
        migrate = subprocess.run(compose_local.argv(services["migrate"], tmp_path), env=env("migrate"),
                                 cwd=tmp_path, capture_output=True, text=True, timeout=LIMIT_S)
        assert migrate.returncode == 0, f"migrate: {migrate.stderr[-3000:]}"
        ingest = services["ingest"]
        processes.start("ingest", compose_local.argv(ingest, tmp_path), env("ingest"))
        for name in ("worker", "beat"):
            for replica in range(compose_local.replicas(services[name])):
                processes.start(f"{name}-{replica}", compose_local.argv(services[name], tmp_path), env(name))
        url = f"http://127.0.0.1:{port}"
        _wait("/healthz", processes, lambda: _status(f"{url}/healthz") == 200)
        probe = compose_local.healthcheck(ingest, port)
        _wait("the compose health check (/readyz)", processes,
              lambda: subprocess.run(probe, capture_output=True, timeout=30).returncode == 0)
        yield Topology(url, token, slack, fresh_pg_url, processes)
        processes.check_alive()  # nothing died while the job went through
    finally:
        processes.stop()
        slack.stop()
        client = redis.Redis.from_url(BROKER.rsplit("/", 1)[0] + "/0")
        for key in client.scan_iter(match=f"{prefix}*"):
            client.delete(key)
        client.close()


def _status(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.HTTPError:
        return None


def _incidents(database_url: str) -> list[tuple[str, str | None, int | None]]:
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text("select job_id, signature, rank from incidents"))]
    finally:
        engine.dispose()


def test_the_compose_topology_turns_a_failed_job_into_one_incident_and_one_post(topology: Topology) -> None:
    with httpx.Client(base_url=topology.url, timeout=30) as http:
        auth = {"Authorization": f"Bearer {topology.token}"}
        subscription = {"team": "vision", "targets": [{"kind": "slack", "address": "#ml-oncall"}]}
        assert http.post("/v1/subscriptions", json=subscription).status_code == 401  # the compose token guards writes
        assert http.post("/v1/subscriptions", json=subscription, headers=auth).status_code == 201
        job = {"job_id": "compose-1", "state": "failed", "world_size": 2, "cluster": "c1", "team": "vision",
               "node_logs": False}
        assert http.post("/v1/jobs", json=job, headers=auth).status_code == 202
        for rank, text in RANK_LOGS.items():
            shard = {"job_id": "compose-1", "rank": rank, "host": f"node00{rank}", "stream": "stderr", "seq": 0,
                     "eof": True, "compression": "gzip", "data": _gzip_b64(text)}
            assert http.post("/v1/shards", json=shard, headers=auth).status_code == 202
        posted = _wait("the Slack post", topology.processes, lambda: topology.slack.posts("ml-oncall"))
        assert len(posted) == 1 and "compose-1" in posted[0].text  # type: ignore[arg-type, index]
        assert _incidents(topology.database_url) == [("compose-1", "cuda.oom", 1)]


def _gzip_b64(text: str) -> str:
    import base64

    return base64.b64encode(gzip.compress(text.encode())).decode()
