"""/v1/subscriptions and the /subscriptions page, served by uvicorn on 127.0.0.1, on SQLite and PostgreSQL:
what a team sees when it manages its subscriptions over HTTP, and that the CLI and routing see the same ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from api.app import create_app
from config.settings import Settings
from firstfault.cli import main
from notifiers.routing import route
from pipeline.embedded import EmbeddedRunner
from store.incidents import Store
from store.notify_tables import SubscriptionRow
from tests.api.conftest import TOKEN
from tests.api.server import serving
from tests.notifiers.conftest import ROUTING_KEY, make_incident

AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOOK = "https://hooks.example.org/services/T0001/B0002/s3cretPathToken"
ONCALL = {"team": "llm", "name": "on-call", "match": {"tags": ["memory", "nccl"], "clusters": ["h100-*"]},
          "targets": [{"kind": "slack", "address": "#ml-oncall"}, {"kind": "pagerduty", "address": ROUTING_KEY},
                      {"kind": "webhook", "address": HOOK}]}


@pytest.fixture
def served(db_url: str) -> Iterator[tuple[httpx.Client, Store]]:
    store = Store.open(db_url)
    app = create_app(Settings(database_url=db_url, api_token=TOKEN, webhook_allow_hosts="hooks.example.org"),
                     EmbeddedRunner(), store)
    with serving(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, store
    store.close()


def _stored(store: Store) -> list[dict[str, object]]:
    with store.notify() as tx:
        return [x.model_dump(mode="json") for x in tx.subscriptions()]


def test_create_list_get_and_delete_with_secrets_masked(served: tuple[httpx.Client, Store]) -> None:
    client, store = served
    created = client.post("/v1/subscriptions", json=ONCALL, headers=AUTH)
    assert created.status_code == 201, created.text
    sub = created.json()
    assert sub["id"].startswith("sub-") and created.headers["location"] == f"/v1/subscriptions/{sub['id']}"
    assert sub["targets"] == [
        {"kind": "slack", "address": "#ml-oncall", "masked": False},
        {"kind": "pagerduty", "address": "…RRRR", "masked": True},
        {"kind": "webhook", "address": "https://hooks.example.org/…oken", "masked": True}]
    for answer in (client.get("/v1/subscriptions"), client.get(f"/v1/subscriptions/{sub['id']}")):
        assert answer.status_code == 200
        assert ROUTING_KEY not in answer.text and "s3cretPathToken" not in answer.text
    assert client.get("/v1/subscriptions").json() == [sub]
    assert client.get(f"/v1/subscriptions/{sub['id']}").json() == sub

    # the store keeps the full destinations, and routing uses them
    [stored] = _stored(store)
    assert stored["targets"][1] == {"kind": "pagerduty", "address": ROUTING_KEY}
    with store.notify() as tx:
        routes = route(make_incident(), tx.subscriptions(), datetime.now(UTC))
    assert {(r.target.kind, r.target.address, r.outcome) for r in routes} == {
        ("slack", "#ml-oncall", "send"), ("pagerduty", ROUTING_KEY, "send"), ("webhook", HOOK, "send")}

    assert client.delete(f"/v1/subscriptions/{sub['id']}", headers=AUTH).status_code == 204
    assert client.get(f"/v1/subscriptions/{sub['id']}").status_code == 404
    assert client.delete(f"/v1/subscriptions/{sub['id']}", headers=AUTH).status_code == 404
    assert client.get("/v1/subscriptions").json() == [] and _stored(store) == []


def test_patch_changes_only_what_it_names_and_put_replaces(served: tuple[httpx.Client, Store]) -> None:
    client, store = served
    sub = client.post("/v1/subscriptions", json=ONCALL, headers=AUTH).json()
    patched = client.patch(f"/v1/subscriptions/{sub['id']}", headers=AUTH, json={
        "mute_until": "2026-12-02T09:00:00Z", "quiet_hours": {"start": "22:00", "end": "07:00",
                                                              "timezone": "Europe/Paris"}})
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["mute_until"] == "2026-12-02T09:00:00Z" and body["quiet_hours"]["timezone"] == "Europe/Paris"
    assert body["targets"] == sub["targets"] and body["match"] == sub["match"]
    assert body["created_at"] == sub["created_at"]
    [stored] = _stored(store)  # the masked answer did not overwrite the real routing key
    assert stored["targets"][1]["address"] == ROUTING_KEY and stored["team"] == "llm"

    cleared = client.patch(f"/v1/subscriptions/{sub['id']}", headers=AUTH, json={"mute_until": None}).json()
    assert cleared["mute_until"] is None and cleared["quiet_hours"] is not None

    put = client.put(f"/v1/subscriptions/{sub['id']}", headers=AUTH, json={
        "team": "infra", "fallback": True, "targets": [{"kind": "slack", "address": "#firstfault-triage"}]})
    assert put.status_code == 200, put.text
    assert put.json()["team"] == "infra" and put.json()["fallback"] is True and put.json()["quiet_hours"] is None
    assert [s["id"] for s in _stored(store)] == [sub["id"]]
    assert _stored(store)[0]["targets"] == [{"kind": "slack", "address": "#firstfault-triage"}]
    assert client.put("/v1/subscriptions/sub-nothere", headers=AUTH, json=ONCALL).status_code == 404
    assert client.patch("/v1/subscriptions/sub-nothere", headers=AUTH, json={}).status_code == 404


def test_writes_need_the_token_reads_do_not(served: tuple[httpx.Client, Store]) -> None:
    client, store = served
    sub = client.post("/v1/subscriptions", json=ONCALL, headers=AUTH).json()
    wrong = {"Authorization": "Bearer not-it"}
    for headers in ({}, wrong):
        answers = [client.post("/v1/subscriptions", json=ONCALL, headers=headers),
                   client.put(f"/v1/subscriptions/{sub['id']}", json=ONCALL, headers=headers),
                   client.patch(f"/v1/subscriptions/{sub['id']}", json={"team": "x"}, headers=headers),
                   client.delete(f"/v1/subscriptions/{sub['id']}", headers=headers)]
        assert [a.status_code for a in answers] == [401] * 4
        assert answers[0].headers["www-authenticate"] == "Bearer"
    assert [s["team"] for s in _stored(store)] == ["llm"]
    assert client.get("/v1/subscriptions").status_code == 200


@pytest.mark.parametrize(("change", "reason"), [
    ({"targets": [{"kind": "pagerduty", "address": "short"}]}, "32 letters and digits"),
    ({"targets": [{"kind": "webhook", "address": "ftp://x"}]}, "http(s) URL"),
    ({"targets": []}, "at least 1 item"),
    ({"mute_until": "2026-12-02T09:00:00"}, "needs a time zone"),
    ({"quiet_hours": {"start": "22:00", "end": "07:00", "timezone": "Mars/Olympus"}}, "unknown time zone"),
    ({"match": {"severities": ["loud"]}}, "'critical', 'error', 'warning' or 'info'"),
    ({"colour": "red"}, "Extra inputs are not permitted"),
    ({"team": ""}, "at least 1 character"),
])
def test_invalid_subscriptions_are_refused_with_the_reason(served: tuple[httpx.Client, Store],
                                                           change: dict[str, object], reason: str) -> None:
    client, store = served
    answer = client.post("/v1/subscriptions", json={**ONCALL, **change}, headers=AUTH)
    assert answer.status_code == 422 and reason in answer.text, answer.text
    sub = client.post("/v1/subscriptions", json=ONCALL, headers=AUTH).json()
    patched = client.patch(f"/v1/subscriptions/{sub['id']}", json=change, headers=AUTH)
    assert patched.status_code == 422 and reason in patched.text, patched.text
    assert [s["targets"] for s in _stored(store)] == [[t for t in ONCALL["targets"]]]  # nothing half-written


def test_a_stored_subscription_that_no_longer_validates_is_reported_and_can_be_replaced(
        served: tuple[httpx.Client, Store]) -> None:
    client, store = served
    with store.session() as s:  # edited by hand: a routing key of the wrong length
        s.add(SubscriptionRow(id="sub-broken", team="llm", match={}, targets=[{"kind": "pagerduty",
                                                                              "address": "abc"}],
                              created_at=datetime(2026, 11, 1, tzinfo=UTC)))
    assert client.get("/v1/subscriptions").json() == []  # routing skips it too
    got = client.get("/v1/subscriptions/sub-broken")
    assert got.status_code == 409 and "PUT a valid one or DELETE it" in got.text
    assert client.patch("/v1/subscriptions/sub-broken", json={"team": "x"}, headers=AUTH).status_code == 409
    fixed = client.put("/v1/subscriptions/sub-broken", json=ONCALL, headers=AUTH)
    assert fixed.status_code == 200 and fixed.json()["created_at"] == "2026-11-01T00:00:00Z"
    assert [s["id"] for s in client.get("/v1/subscriptions").json()] == ["sub-broken"]


def test_a_refused_routing_key_is_not_echoed_back(served: tuple[httpx.Client, Store]) -> None:
    client, _ = served
    almost = "Q" * 31  # one character short: refused, but still somebody's credential
    bad = {**ONCALL, "targets": [{"kind": "pagerduty", "address": almost}]}
    for answer in (client.post("/v1/subscriptions", json=bad, headers=AUTH),
                   client.put("/v1/subscriptions/sub-x", json=bad, headers=AUTH)):
        assert answer.status_code == 422 and "32 letters and digits" in answer.text
        assert almost not in answer.text


def test_bodies_the_database_cannot_hold_are_422_not_500(served: tuple[httpx.Client, Store], db_url: str) -> None:
    client, _ = served
    nul = client.post("/v1/subscriptions", json={**ONCALL, "team": "ll\x00m"}, headers=AUTH)
    if db_url.startswith("postgresql"):  # SQLite keeps a NUL; PostgreSQL text cannot
        assert nul.status_code == 422 and "cannot contain NUL" in nul.json()["detail"][0]["msg"]
    else:
        assert nul.status_code == 201
    broken = client.post("/v1/subscriptions", content=b'{"team": "llm", "targ', headers={
        **AUTH, "Content-Type": "application/json"})
    assert broken.status_code == 422 and "JSON decode error" in broken.text
    assert client.get("/v1/subscriptions/sub-\x00x".replace("\x00", "%00")).status_code == 404
    assert client.patch("/v1/subscriptions/x", json={"team": None}, headers=AUTH).status_code == 404


def test_the_cli_and_the_api_see_the_same_subscriptions_and_the_page_lists_them(
        served: tuple[httpx.Client, Store], db_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    client, _ = served
    for name in ("FIRSTFAULT_CONFIG", "FIRSTFAULT_SLACK_TOKEN", "FIRSTFAULT_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FIRSTFAULT_DATABASE_URL", db_url)
    assert main(["subscribe", "--team", "infra", "--category", "host", "--pagerduty", ROUTING_KEY,
                 "--quiet-hours", "22:00-07:00"]) == 0
    cli_id = capsys.readouterr().out.strip()
    api_id = client.post("/v1/subscriptions", json=ONCALL, headers=AUTH).json()["id"]
    assert {s["id"] for s in client.get("/v1/subscriptions").json()} == {cli_id, api_id}
    assert main(["subscriptions", "--format", "json"]) == 0
    listed = {s["id"]: s for s in json.loads(capsys.readouterr().out)}
    assert set(listed) == {cli_id, api_id} and listed[api_id]["match"]["clusters"] == ["h100-*"]

    page = client.get("/subscriptions")
    assert page.status_code == 200 and '<a href="/subscriptions">Subscriptions</a>' in page.text
    assert cli_id in page.text and api_id in page.text and "#ml-oncall" in page.text and "…RRRR" in page.text
    assert ROUTING_KEY not in page.text and "s3cretPathToken" not in page.text
    assert "quiet 22:00–07:00 UTC" in page.text and "clusters: h100-*" in page.text
    assert main(["unsubscribe", api_id]) == 0
    assert [s["id"] for s in client.get("/v1/subscriptions").json()] == [cli_id]


def test_the_openapi_describes_every_subscription_operation(served: tuple[httpx.Client, Store]) -> None:
    client, _ = served
    spec = client.get("/openapi.json").json()
    ops = spec["paths"]["/v1/subscriptions"] | spec["paths"]["/v1/subscriptions/{subscription_id}"]
    assert set(ops) == {"get", "post", "put", "patch", "delete"}
    assert ops["post"]["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SubscriptionOut"}
    assert "401" in ops["post"]["responses"] and "422" in ops["patch"]["responses"]
    assert {"SubscriptionIn", "SubscriptionPatch", "SubscriptionOut", "TargetOut"} <= set(spec["components"]["schemas"])
