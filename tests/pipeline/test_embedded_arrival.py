"""`serve --embedded` scans shards as they arrive and correlates a job once (issue 23), with the real parts: the
service as `firstfault serve --embedded` builds it (its scan processes, SQLite), uvicorn, and `firstfault ship`'s
HTTP transport. A generated 48-rank job (every rank's watchdog timeout at the same second: ties a numbering must
break as `diagnose` does). group_wait is longer than any test: an incident is the correlation a job's completion
triggers, on every shard."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import zstandard

import pipeline.service
from config.settings import load_settings
from firstfault.serve import Embedded, build_embedded
from ingest.ship import HttpTransport, Overrides, ship_logs
from pipeline.embedded import EmbeddedRunner
from schemas.diagnosis import Diagnosis
from schemas.errors import RetryableError
from schemas.wire import JobEvent, LogShard
from sources.shard_data import packed_shard_data
from store.dead_letters import listed
from tests.api.server import serving
from tests.integration.celery_worker import wait_for
from tests.pipeline.helpers import EXAMPLE, shards_of

RANKS = 48


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from simulate.training_logs import generate

    root = tmp_path_factory.mktemp("arrival")
    generate(root / "gen", RANKS, RANKS * 40_000, seed=5, quiet=True)
    return root / "gen" / "logs"


@pytest.fixture(scope="module")
def cli(logs: Path) -> Diagnosis:
    """`firstfault diagnose` of the files, knowing the job's end as the pipeline does from its event (else the CLI
    notes that it took the end from the last failure line: the only difference; test_distributed.py)."""
    from correlator.diagnose import diagnose
    from scan.engine import default_matcher, diagnose_sources, scan_sources
    from sources.files import expand

    year = datetime.now(UTC).year
    ended = diagnose_sources(default_matcher(), expand([str(logs)]), year).impact
    assert ended is not None and ended.ended_at is not None
    scanned = scan_sources(default_matcher(), expand([str(logs)]), year).results
    return diagnose(scanned, default_matcher().catalog, ended_at=ended.ended_at)


def _service(sqlite_url: str, **environ: str) -> Embedded:
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": sqlite_url, "FIRSTFAULT_GROUP_WAIT_S": "240",
                                      **environ}, path="/dev/null")
    return build_embedded(settings, on_saved=lambda *_: None)


@contextmanager
def _served(sqlite_url: str, **environ: str) -> Iterator[tuple[Embedded, str]]:
    service = _service(sqlite_url, **environ)
    service.runner.start()
    try:
        with serving(service.app) as url:
            yield service, url
    finally:
        service.runner.stop()
        service.store.close()


@pytest.fixture
def served(sqlite_url: str) -> Iterator[tuple[Embedded, str]]:
    with _served(sqlite_url) as both:
        yield both


@pytest.fixture
def correlations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each diagnose a correlation ran (in the runner's thread, in this process)."""
    seen: list[str] = []
    from correlator.diagnose import diagnose as real

    def counted(results: Any, *args: Any, **kwargs: Any) -> Diagnosis:
        seen.append("diagnosed")
        return real(results, *args, **kwargs)

    monkeypatch.setattr(pipeline.service, "diagnose", counted)
    return seen


def _ship(url: str, job_id: str, logs: Path) -> int:
    return ship_logs(HttpTransport(url), job_id, [str(logs)], Overrides(), "zstd", lambda _msg: None).shards


def _send(url: str, event: JobEvent) -> None:
    transport = HttpTransport(url)
    try:
        transport.send_job(event)
    finally:
        transport.close()


def _event(job_id: str, cli: Diagnosis) -> JobEvent:
    assert cli.impact is not None
    return JobEvent(job_id=job_id, state="failed", world_size=RANKS, cluster="c9", team="llm",
                    ended_at=cli.impact.ended_at)


def _same(found: Diagnosis, cli: Diagnosis) -> bool:
    return found.model_dump(mode="json") == cli.model_dump(mode="json")


def test_shards_are_scanned_before_the_job_event_and_the_event_correlates_once(
        served: tuple[Embedded, str], logs: Path, cli: Diagnosis, correlations: list[str]) -> None:
    service, url = served
    shipped = _ship(url, "arrive-1", logs)
    wait_for(service.runner.idle, 120, "every shard handed over to be stored")
    # before the job's end is known, every shard is scanned and stored, and its scan kept for the correlation
    view = service.store.job("arrive-1")
    assert view.event is None and len(view.shards) == shipped > RANKS
    assert all(isinstance(shard.scanned, Mapping) and shard.scanned["lines"] > 0 for shard in view.shards)
    assert service.pipeline.recent.shards("arrive-1", shipped) is not None
    assert service.store.incident_for_job("arrive-1") is None and correlations == []
    _send(url, _event("arrive-1", cli))
    incident = wait_for(lambda: service.store.incident_for_job("arrive-1"), 120, "the incident")
    wait_for(service.runner.idle, 60, "the runner to settle")
    assert correlations == ["diagnosed"]  # one correlation for the job, on shards scanned before it came
    assert _same(incident.diagnosis, cli) and incident.revision == 1
    assert not service.runner.failures


def _corrupt(job_id: str) -> LogShard:
    """A zstd shard whose frame is damaged past its header. A source of its own, which none of the job's files is."""
    frame = bytearray(zstandard.ZstdCompressor().compress((EXAMPLE / "node004" / "dmesg.log").read_bytes()))
    frame[len(frame) // 2:] = b"\xff" * (len(frame) - len(frame) // 2)
    return LogShard(job_id=job_id, host="node099", stream="dmesg", seq=0, eof=True, compression="zstd",
                    data=base64.b64encode(bytes(frame)).decode(), source="node099/dmesg.log")


def test_a_malformed_shard_is_refused_or_dead_lettered_and_every_other_shard_is_diagnosed(
        served: tuple[Embedded, str], logs: Path, cli: Diagnosis) -> None:
    """Over HTTP the edge inflates a shard before it answers: 400 with the reason, which the shipper hears. Handed
    to the runner in process (no edge checked it), the scan process that cannot inflate it makes it a dead letter,
    kept as sent. Either way the job's other shards, in the same burst, are all stored and diagnosed."""
    service, url = served
    bad = _corrupt("bad-1")
    _send(url, _event("bad-1", cli).model_copy(update={"world_size": None}))
    with httpx.Client(base_url=url, timeout=30) as http:
        refused = http.post("/v1/shards", content=bad.model_dump_json())
    assert refused.status_code == 400 and "zstd" in refused.json()["detail"]
    service.runner.submit_shard(bad, {})  # among the first shards: scanned in a batch with others
    shipped = _ship(url, "bad-1", logs)
    # not runner.idle(): the job's group_wait timer is pending (it has no world size to complete by)
    wait_for(lambda: listed(service.store, "bad-1") and service.store.job("bad-1", listed=False).stored == shipped,
             120, "every shard stored or dead-lettered")
    letters = listed(service.store, "bad-1")
    assert [letter.where for letter in letters] == ["match_shard"]
    assert LogShard.model_validate(letters[0].payload) == bad  # kept as sent: replayable
    assert len(service.store.job("bad-1").shards) == shipped  # every other shard stored
    service.pipeline.correlate("bad-1")
    incident = service.store.incident_for_job("bad-1")
    assert incident is not None and _same(incident.diagnosis, cli)


def test_a_burst_past_the_backlog_is_pushed_back_and_loses_nothing(sqlite_url: str, logs: Path,
                                                                  cli: Diagnosis) -> None:
    """The whole job handed over at once, as the edge hands on what it decoded (bench.pipeline's burst), into a
    budget of 16 kB, a few of its shards: the producer is held back until there is room, again after a refusal
    as a shipper is, and every shard arrives; the runner never held more than the budget and one shard."""
    shards = [(shard, packed_shard_data(shard)) for shard in shards_of("burst-1", logs, chunk=16 * 1024)]
    with _served(sqlite_url, FIRSTFAULT_QUEUE_BYTES=str(16 * 1024)) as (service, _):
        for shard, data in shards:
            wait_for(lambda s=shard, d=data: _admitted(service, s, d), 120, "room for the shard", every=0.1)
        service.runner.submit_job(_event("burst-1", cli), {})
        incident = wait_for(lambda: service.store.incident_for_job("burst-1"), 120, "the incident")
        assert len(service.store.job("burst-1").shards) == len(shards)
        backlog = service.runner.backlog
    assert backlog.waits > 0 and 0 < backlog.peak <= 16 * 1024 + max(len(data) for _, data in shards)
    assert _same(incident.diagnosis, cli)


def _admitted(service: Embedded, shard: LogShard, data: bytes) -> bool:
    try:
        service.runner.submit_shard(shard, {}, data)
    except RetryableError:
        return False
    return True


def test_a_full_backlog_refuses_after_its_wait_and_lets_go_of_what_it_refused() -> None:
    """Nothing drains this runner (not started): past its budget a submit waits, then is refused as retryable
    (the HTTP ingest's 503); what it held stays what it admitted."""
    shards = shards_of("full", EXAMPLE, chunk=2048)
    runner = EmbeddedRunner(queue_size=1000, put_timeout=0.05, max_bytes=3 * 2048)
    admitted = 0
    with pytest.raises(RetryableError):
        for shard in shards:
            runner.submit_shard(shard, {})
            admitted += len(shard.data)
    assert 0 < admitted == runner.backlog.held <= 3 * 2048


def test_the_http_ingest_answers_while_a_shard_waits_for_room(sqlite_url: str) -> None:
    """A shard held back waits in a thread of its own: the server keeps answering meanwhile. The runner is not
    started, so the second shard waits for room (5 s, then 503) while /healthz is asked."""
    service = _service(sqlite_url, FIRSTFAULT_QUEUE_BYTES="1")
    first, second = shards_of("wait", EXAMPLE)[:2]
    answers: list[int] = []
    with serving(service.app) as url, httpx.Client(base_url=url, timeout=30) as http:
        assert http.post("/v1/shards", content=first.model_dump_json()).status_code == 202  # admitted: held
        waiting = threading.Thread(target=lambda: answers.append(
            httpx.post(f"{url}/v1/shards", content=second.model_dump_json(), timeout=30).status_code))
        waiting.start()
        wait_for(lambda: service.runner.backlog.waiting, 10, "the second shard to wait for room", every=0.01)
        assert http.get("/healthz").status_code == 200
        assert waiting.is_alive()  # answered while the shard still waits
        waiting.join(30)
    assert answers == [503]
    service.store.close()
