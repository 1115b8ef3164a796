"""Issue 27's bad messages against `firstfault serve --embedded` over real HTTP: each is a prompt 400 with a
reason, nothing reaches the store, and the service keeps serving."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator

import httpx
import pytest

from api.limits import MAX_BODY_BYTES
from config.settings import load_settings
from firstfault.serve import Embedded, build_embedded
from schemas.wire import MAX_WORLD_SIZE
from tests.api.server import serving
from tests.integration.celery_worker import wait_for
from tests.pipeline.helpers import failed_job

TOKEN = "s3cret-test-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


@pytest.fixture
def service(sqlite_url: str) -> Iterator[tuple[Embedded, httpx.Client]]:
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": sqlite_url, "FIRSTFAULT_API_TOKEN": TOKEN,
                                      "FIRSTFAULT_GROUP_WAIT_S": "60"}, path="/dev/null")
    embedded = build_embedded(settings)
    embedded.runner.start()
    with serving(embedded.app) as url, httpx.Client(base_url=url, headers=HEADERS, timeout=10) as http:
        yield embedded, http
    embedded.runner.stop()
    embedded.store.close()


def _shard(job_id: str, **extra: object) -> dict[str, object]:
    return {"job_id": job_id, "rank": 0, "seq": 0, "eof": True, "data": "hello\n"} | extra


def _still_serving(http: httpx.Client) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}


def test_a_world_size_of_a_billion_is_refused_at_once(service: tuple[Embedded, httpx.Client]) -> None:
    embedded, http = service
    started = time.monotonic()
    answer = http.post("/v1/jobs", json={"job_id": "j", "state": "failed", "world_size": 1_000_000_000})
    assert answer.status_code == 400
    assert "world_size" in answer.json()["detail"] and f"{MAX_WORLD_SIZE}" in answer.json()["detail"]
    assert http.post("/v1/shards", json=_shard("j")).status_code == 202
    wait_for(lambda: embedded.runner.idle() or None, 10, "the shard to be stored")
    assert time.monotonic() - started < 5
    assert embedded.store.job("j").event is None and list(embedded.runner.failures) == []
    _still_serving(http)


def test_the_largest_world_size_allowed_costs_what_the_shards_cost(service: tuple[Embedded, httpx.Client]) -> None:
    """A failed job claiming 2**20 ranks, then one shard: recording them (and deciding the job is not complete
    yet) allocates nothing the size of the claim. set(range(world_size)) took ~60 MB here, at each decision."""
    embedded, http = service
    tracemalloc.start()
    try:
        started = time.monotonic()
        assert http.post("/v1/jobs", json=failed_job("big", world_size=MAX_WORLD_SIZE).model_dump(mode="json")
                         ).status_code == 202
        wait_for(lambda: embedded.store.job("big").event, 10, "the job to be recorded")
        assert http.post("/v1/shards", json=_shard("big")).status_code == 202
        wait_for(lambda: embedded.store.job("big").shards, 10, "the shard to be stored")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert peak < 20 << 20, f"peak {peak / 1e6:.0f} MB for a job and one shard"
    assert list(embedded.runner.failures) == []


def test_a_rank_of_ten_to_the_thirty_is_a_400_not_a_dropped_task(service: tuple[Embedded, httpx.Client]) -> None:
    embedded, http = service
    answer = http.post("/v1/shards", json=_shard("r", rank=10**30))
    assert answer.status_code == 400 and "rank" in answer.json()["detail"]
    answer = http.post("/v1/jobs", json={"job_id": "r", "state": "failed", "rank_hosts": {str(10**30): "node0"}})
    assert answer.status_code == 400 and "rank_hosts" in answer.json()["detail"]
    time.sleep(0.2)
    assert embedded.runner.idle() and list(embedded.runner.failures) == []
    assert embedded.store.job("r").event is None and embedded.store.job("r").shards == []
    _still_serving(http)


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/shards"])
@pytest.mark.parametrize(("body", "reason"), [
    (b"[" * 100_000, "nested deeper than 32 levels"),
    (b'{"job_id": "j", "labels": ' + b"[" * 100 + b"]" * 100 + b"}", "nested deeper than 32 levels"),
    (b'{"job_id": "j", "seq": ' + b"9" * 5000 + b"}", "digits"),
    (b'{"job_id": "j", "state": "failed"', "not JSON"),
    (b'{"job_id": "\xff"}', "not UTF-8"),
])
def test_a_body_that_cannot_be_read_is_a_400_with_why(service: tuple[Embedded, httpx.Client], path: str,
                                                      body: bytes, reason: str) -> None:
    _, http = service
    answer = http.post(path, content=body)
    assert answer.status_code == 400
    assert reason in answer.json()["detail"]
    _still_serving(http)


@pytest.mark.parametrize(("field", "value"), [
    ("job_id", "j" * 257), ("host", "h" * 256), ("source", "s" * 513), ("seq", 2**31), ("seq", -1),
    ("rank", -1), ("rank", MAX_WORLD_SIZE),
])
def test_each_shard_bound_is_a_400_naming_the_field(service: tuple[Embedded, httpx.Client], field: str,
                                                    value: object) -> None:
    _, http = service
    answer = http.post("/v1/shards", json=_shard("j") | {field: value})
    assert answer.status_code == 400 and answer.json()["detail"].startswith(field)


@pytest.mark.parametrize(("field", "value"), [
    ("hosts", ["n"] * ((1 << 17) + 1)), ("labels", {f"k{i}": "v" for i in range(65)}),
    ("labels", {"k": "v" * 1025}), ("team", "t" * 257), ("cluster", "c" * 257), ("attempt", 10**7),
    ("exit_codes", {"0": 2**40}), ("world_size", 0),
])
def test_each_job_bound_is_a_400_naming_the_field(service: tuple[Embedded, httpx.Client], field: str,
                                                  value: object) -> None:
    _, http = service
    answer = http.post("/v1/jobs", json={"job_id": "j", "state": "failed", field: value})
    assert answer.status_code == 400 and answer.json()["detail"].startswith(field)


@pytest.mark.parametrize("path", ["/v1/shards", "/v1/subscriptions", "/v1/incidents/x/resolve"])
def test_a_body_past_the_limit_is_a_413_before_it_is_read_whole(service: tuple[Embedded, httpx.Client],
                                                                 path: str) -> None:
    """Declared too long, or sent chunked without a length and cut off as it arrives: 413, the service holds at
    most the limit."""
    _, http = service
    declared = http.post(path, content=b"x" * (MAX_BODY_BYTES + 1))
    assert declared.status_code == 413 and f"{MAX_BODY_BYTES:,} bytes" in declared.json()["detail"]

    def chunks() -> Iterator[bytes]:
        for _ in range(64):  # 64 MiB if it were all read
            yield b"[" * (1 << 20)

    chunked = http.post(path, content=chunks())
    assert chunked.status_code == 413
    _still_serving(http)


def test_a_client_still_sending_a_refused_body_reads_the_413_not_a_reset(
        service: tuple[Embedded, httpx.Client]) -> None:
    """The 413 goes out while the client is still writing its body; closing the socket on unread bytes makes the
    kernel send a reset that can beat the answer to the client, so the refused body is read and dropped first."""
    _, http = service
    body = b"x" * (8 * MAX_BODY_BYTES)
    answers = [http.post("/v1/shards", content=body).status_code for _ in range(25)]
    assert answers == [413] * 25
