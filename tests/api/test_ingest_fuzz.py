"""Property test of HTTP ingest through the real app over real HTTP (uvicorn, the embedded runner behind it):
whatever the body, POST /v1/jobs and /v1/shards answer 202, 400 or 413 with a reason, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.app import create_app
from config.settings import Settings
from pipeline.embedded import EmbeddedRunner
from store.incidents import Store
from tests.api.server import serving
from tests.unit.test_wire_fuzz import messages

TOKEN = "s3cret-test-token"
# ~400 requests over real HTTP, ~20 s (round trips, not CPU); the decoding beneath is fuzzed far more in
# tests/unit/test_wire_fuzz.py
QUICK = settings(max_examples=100, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'firstfault.db'}"
    store = Store.open(url)
    # a runner never started: accepted messages wait in its queue, so each example costs the HTTP edge alone
    app = create_app(Settings(database_url=url, api_token=TOKEN), EmbeddedRunner(queue_size=100_000), store)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    with serving(app) as url, httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        yield http
    store.close()


def _answer(http: httpx.Client, path: str, body: bytes) -> None:
    answer = http.post(path, content=body)
    assert answer.status_code in (202, 400, 413), (answer.status_code, answer.text[:300])
    if answer.status_code != 202:
        assert answer.json()["detail"]


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/shards"])
@QUICK
@given(body=st.binary(max_size=200))
def test_any_body_is_accepted_or_refused_with_a_reason(client: httpx.Client, path: str, body: bytes) -> None:
    _answer(client, path, body)


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/shards"])
@QUICK
@given(obj=messages, depth=st.sampled_from([0, 0, 0, 40, 100_000]))
def test_any_json_is_accepted_or_refused_with_a_reason(client: httpx.Client, path: str, obj: dict[str, object],
                                                       depth: int) -> None:
    body = {"job_id": "j", "state": "failed", "seq": 0, "data": "x", **obj}
    _answer(client, path, b"[" * depth + json.dumps(body).encode() + b"]" * depth)
