"""The distributed mode end to end, as an operator runs it: `firstfault ship` → Kafka (Tansu) → `firstfault serve`
→ Celery worker (Redis) → PostgreSQL. Bad messages go to the DLQ with reasons while good ones keep flowing; the
incident is `firstfault diagnose`'s diagnosis of the same files, with one worker or two."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import kafka
import pytest

from store.incidents import Store
from tests.conftest import BROKER
from tests.integration.celery_worker import ROOT, Worker, service_env, wait_for
from tests.integration.kafka_helpers import read_topic
from tests.pipeline.helpers import EXAMPLE

pytestmark = pytest.mark.integration


@pytest.fixture
def env(fresh_pg_url: str, broker_prefix: str, kafka_bootstrap: str) -> dict[str, str]:
    return service_env(fresh_pg_url, BROKER, FIRSTFAULT_BROKER_PREFIX=broker_prefix,
                       FIRSTFAULT_QUEUE=f"{broker_prefix}firstfault", FIRSTFAULT_KAFKA_BOOTSTRAP=kafka_bootstrap,
                       FIRSTFAULT_KAFKA_GROUP=f"g-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def store(fresh_pg_url: str) -> Iterator[Store]:
    opened = Store.open(fresh_pg_url)  # migrated here, so the test can read before `serve` has started
    yield opened
    opened.close()


@pytest.fixture
def service(env: dict[str, str], store: Store, tmp_path: Path) -> Iterator[None]:
    with _served(env, tmp_path, workers=1):
        yield


@contextmanager
def _served(env: dict[str, str], tmp_path: Path, workers: int) -> Iterator[None]:
    with (tmp_path / "serve.log").open("wb") as log:
        serve = subprocess.Popen([sys.executable, "-m", "firstfault.cli", "serve", "--no-http"], cwd=ROOT, env=env,
                                 stdout=log, stderr=subprocess.STDOUT)
        running = [Worker(env, tmp_path / f"worker{n}.log") for n in range(workers)]
        try:
            yield
        finally:
            for worker in running:
                worker.stop()
            serve.terminate()
            assert serve.wait(timeout=30) == 0, (tmp_path / "serve.log").read_text()[-3000:]


def _ship(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "firstfault.cli", "ship", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_shipped_job_becomes_an_incident_and_bad_messages_are_dead_lettered(
        env: dict[str, str], service: None, store: Store, kafka_bootstrap: str) -> None:
    bad = [b"{not json", b'{"job_id": "bad-2", "seq": 0}', b"\xff\xfe binary", b""]
    producer = kafka.KafkaProducer(bootstrap_servers=kafka_bootstrap)
    for i, value in enumerate(bad):
        producer.send("firstfault.shards", key=f"bad-{i}".encode(), value=value)
    producer.flush()
    producer.close()
    _ship(env, "--job", "dist-1", "--state", "failed", "--world-size", "64", "--cluster", "c9", "--team", "llm")
    _ship(env, "--job", "dist-1", str(EXAMPLE))
    def named() -> object:  # under load group_wait may pass first; then a revision names the cause
        found = store.incident_for_job("dist-1")
        return found if found is not None and found.signature == "host.oom_killer" else None

    incident = wait_for(named, 120, "the incident naming the OOM kill")
    assert (incident.signature, incident.rank, incident.host) == ("host.oom_killer", 37, "node004")
    assert (incident.cluster, incident.team) == ("c9", "llm")
    letters = [json.loads(r.value) for r in read_topic(kafka_bootstrap, "firstfault.dlq", len(bad))]
    assert sorted(letter["key"] for letter in letters) == [f"bad-{i}" for i in range(len(bad))]
    assert all(letter["reason"] for letter in letters)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_incident_is_the_cli_s_diagnosis_of_the_same_files(env: dict[str, str], store: Store, tmp_path: Path,
                                                               workers: int) -> None:
    """A generated 48-rank job (every rank's watchdog timeout at the same second: ties a numbering must break as
    the CLI does) shipped as an operator ships it. One worker correlates on the scans it kept; with two, each
    kept about half and the correlating one reads the job back. group_wait is longer than the test: the incident
    is the correlation the last shard's completion triggers, on every shard."""
    from correlator.diagnose import diagnose
    from scan.engine import default_matcher, diagnose_sources, scan_sources
    from simulate.training_logs import generate
    from sources.files import expand

    generate(tmp_path / "gen", 48, 48 * 40_000, seed=5, quiet=True)
    logs = tmp_path / "gen" / "logs"
    cli = diagnose_sources(default_matcher(), expand([str(logs)]), datetime.now(UTC).year)
    env = {**env, "FIRSTFAULT_GROUP_WAIT_S": "200", "FIRSTFAULT_VISIBILITY_TIMEOUT_S": "300"}
    with _served(env, tmp_path, workers):
        # the end the logs show, which diagnose reads from them: ship would stamp its own clock's
        assert cli.impact is not None and cli.impact.ended_at is not None
        _ship(env, "--job", "same-1", "--state", "failed", "--world-size", "48", "--cluster", "c9",
              "--ended-at", cli.impact.ended_at.isoformat())
        _ship(env, "--job", "same-1", str(logs))
        incident = wait_for(lambda: store.incident_for_job("same-1"), 180, "the incident")
    # the CLI's scan, diagnosed knowing the event's end as the pipeline does (else the CLI notes that it took the
    # end from the last failure line: the only difference)
    scanned = scan_sources(default_matcher(), expand([str(logs)]), datetime.now(UTC).year).results
    cli = diagnose(scanned, default_matcher().catalog, ended_at=cli.impact.ended_at)
    assert incident.diagnosis.model_dump(mode="json") == cli.model_dump(mode="json")
    assert len(cli.timeline) > 40 and incident.revision == 1
