"""`firstfault serve --embedded`'s pieces over real HTTP: ingest, the in-process queue, SQLite, the incident."""

from __future__ import annotations

import base64
import gzip
from collections.abc import Iterator

import httpx
import pytest
import zstandard

import pipeline.service
import sources.shard_data as shard_data
from config.settings import load_settings
from firstfault.serve import Embedded, build_embedded
from schemas.errors import InvalidMessage
from schemas.wire import LogShard
from store.dead_letters import listed
from tests.api.server import serving
from tests.integration.celery_worker import wait_for
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of

TOKEN = "s3cret-test-token"


@pytest.fixture
def embedded(sqlite_url: str, request: pytest.FixtureRequest) -> Iterator[tuple[Embedded, str]]:
    # scan processes by default (one per core, as `serve --embedded` runs); `scan_workers` marks a test that
    # needs another number (0: scanned in the runner's thread, where a test can count the calls)
    marker = request.node.get_closest_marker("scan_workers")
    workers = {"FIRSTFAULT_SCAN_WORKERS": str(marker.args[0])} if marker else {}
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": sqlite_url, "FIRSTFAULT_API_TOKEN": TOKEN,
                                      "FIRSTFAULT_GROUP_WAIT_S": "1", "FIRSTFAULT_REVISE_WAIT_S": "0.5", **workers},
                             path="/dev/null")
    service = build_embedded(settings)
    service.runner.start()
    with serving(service.app) as url:
        yield service, url
    service.runner.stop()
    service.store.close()


def _client(url: str, token: str | None = TOKEN) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=30)


def test_a_job_shipped_over_http_becomes_an_incident(embedded: tuple[Embedded, str]) -> None:
    service, url = embedded
    with _client(url) as http:
        assert http.post("/v1/jobs", json=failed_job("e1").model_dump(mode="json")).status_code == 202
        for shard in shards_of("e1", EXAMPLE, chunk=32 * 1024):
            if shard.seq == 0 and shard.rank == 5:  # one shard compressed, as `firstfault ship` sends them
                packed = base64.b64encode(gzip.compress(shard.data.encode())).decode()
                shard = shard.model_copy(update={"data": packed, "compression": "gzip"})
            assert http.post("/v1/shards", json=shard.model_dump(mode="json")).status_code == 202
    incident = wait_for(lambda: service.store.incident_for_job("e1"), 60, "the incident")
    assert (incident.signature, incident.rank, incident.host) == ("host.oom_killer", 37, "node004")
    assert list(service.runner.failures) == []


def test_writes_need_the_token(embedded: tuple[Embedded, str]) -> None:
    _, url = embedded
    body = failed_job("e2").model_dump(mode="json")
    with _client(url, token=None) as http:
        assert http.post("/v1/jobs", json=body).status_code == 401
    with _client(url, token="wrong") as http:
        assert http.post("/v1/jobs", json=body).status_code == 401


@pytest.mark.parametrize(("path", "body", "says"), [
    ("/v1/jobs", b"{not json", "not JSON"),
    ("/v1/jobs", b'{"job_id": "x"}', "state"),
    ("/v1/jobs", b'{"job_id": "x", "state": "exploded"}', "state"),
    ("/v1/shards", b'{"job_id": "x", "seq": 0, "data": "%%%", "compression": "zstd"}', "base64"),
    ("/v1/shards", b'{"job_id": "x", "seq": -1, "data": ""}', "seq"),
    ("/v1/shards", b"\xff\xfe\x00binary", "not JSON"),
])
def test_bad_messages_get_400_with_the_reason(embedded: tuple[Embedded, str], path: str, body: bytes,
                                              says: str) -> None:
    _, url = embedded
    with _client(url) as http:
        response = http.post(path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert says in response.json()["detail"]


def test_an_oversized_message_is_refused(embedded: tuple[Embedded, str]) -> None:
    _, url = embedded
    with _client(url) as http:
        response = http.post("/v1/shards", content=b"x" * (2 << 20), headers={"content-type": "application/json"})
    assert response.status_code == 413


def _zstd_shard(job_id: str, seq: int) -> LogShard:
    data = (EXAMPLE / "node004" / "dmesg.log").read_bytes()
    return LogShard(job_id=job_id, host="node004", stream="dmesg", seq=seq, eof=True, compression="zstd",
                    data=base64.b64encode(zstandard.ZstdCompressor().compress(data)).decode(), source="dmesg.log")


@pytest.mark.scan_workers(0)  # the calls are counted in this process
def test_a_shard_posted_to_the_embedded_service_is_unpacked_once_and_inflated_where_checked_and_scanned(
        embedded: tuple[Embedded, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """As in the distributed mode (tests/workers/test_refs.py): the edge undoes the base64 and checks that the data
    inflates within the bound, and the queue holds those packed bytes for the worker thread to inflate and scan."""
    service, url = embedded
    seen = {"unbase64": 0, "inflated": 0}
    unbase64, unzstd = shard_data._unbase64, shard_data._unzstd

    def counted_unbase64(shard: LogShard) -> bytes:
        seen["unbase64"] += 1
        return unbase64(shard)

    def counted_unzstd(packed: bytes, limit: int) -> Iterator[bytes]:
        seen["inflated"] += 1
        return unzstd(packed, limit)
    monkeypatch.setattr(shard_data, "_unbase64", counted_unbase64)
    monkeypatch.setattr(shard_data, "_unzstd", counted_unzstd)
    with _client(url) as http:
        assert http.post("/v1/shards", json=_zstd_shard("e3", 0).model_dump(mode="json")).status_code == 202
    wait_for(lambda: service.store.job("e3").shards or None, 30, "the shard stored")
    assert seen == {"unbase64": 1, "inflated": 2}
    [stored] = service.store.job("e3").shards
    assert any(f["signature"] == "host.oom_killer" for f in stored.scanned["findings"])


@pytest.mark.scan_workers(0)  # the scan is broken in this process
def test_a_checked_shard_failing_for_good_in_the_embedded_queue_is_a_dead_letter_of_the_shard_as_sent(
        embedded: tuple[Embedded, str], monkeypatch: pytest.MonkeyPatch) -> None:
    service, url = embedded

    def broken(*_: object) -> object:
        raise InvalidMessage("refused")
    monkeypatch.setattr(pipeline.service, "scan", broken)
    shard = _zstd_shard("e4", 0)
    with _client(url) as http:
        assert http.post("/v1/shards", json=shard.model_dump(mode="json")).status_code == 202
    [letter] = wait_for(lambda: listed(service.store) or None, 30, "the dead letter")
    assert (letter.kind, letter.where, letter.reason) == ("shard", "match_shard", "refused")
    assert letter.payload == shard.model_dump(mode="json")  # replayable: the producer's compressed bytes


def test_the_api_and_the_pipeline_of_one_service_share_one_catalog(embedded: tuple[Embedded, str]) -> None:
    service, _ = embedded
    assert service.app.state.catalog is service.pipeline.matcher.catalog
