"""The history API over a seeded history, on SQLite and PostgreSQL: filters, pages, detail, stats, offenders,
catalog, and the bearer token on writes only."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import Client

from schemas.incident import Incident
from store.incidents import Store
from tests.api.conftest import TOKEN


def _jobs(client: Client, **params: Any) -> list[str]:
    r = client.get("/v1/incidents", params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["total"] == len(body["items"]) or body["next_cursor"]
    return [i["job_id"] for i in body["items"]]


@pytest.mark.parametrize(("params", "expected"), [
    ({}, ["k8s-xid-2", "k8s-xid-1", "train-ecc-1", "train-xid-2", "train-xid-1", "train-oom-1"]),
    ({"tag": "ecc"}, ["k8s-xid-2", "train-ecc-1"]),
    ({"tag": "XID"}, ["k8s-xid-2", "k8s-xid-1", "train-ecc-1", "train-xid-2", "train-xid-1"]),
    ({"tag": "xi"}, []),  # a tag matches whole, not as a substring
    ({"signature": "xid.7*"}, ["k8s-xid-1", "train-xid-2", "train-xid-1"]),
    ({"signature": "host.*"}, ["train-oom-1"]),
    ({"signature": "xid_79"}, []),  # '_' is a literal, not LIKE's any-character
    ({"host": "node004"}, ["train-oom-1"]),  # the initiating host
    ({"host": "node006"}, ["train-oom-1"]),  # a host named only by collateral
    ({"cluster": "k8s-a"}, ["k8s-xid-2", "k8s-xid-1"]),
    ({"team": "vision"}, ["train-xid-2"]),
    ({"state": "resolved"}, []),
    ({"since": "3d"}, ["k8s-xid-2", "k8s-xid-1"]),
    ({"since": "2026-12-02"}, ["k8s-xid-2", "k8s-xid-1", "train-ecc-1", "train-xid-2"]),
    ({"q": "fallen off the bus"}, ["k8s-xid-1", "train-xid-2", "train-xid-1"]),
    ({"q": "pid='<unknown>'"}, ["k8s-xid-1", "train-xid-2", "train-xid-1"]),
    ({"q": "train-oom"}, ["train-oom-1"]),
    ({"tag": "xid", "cluster": "c1", "since": "14d"}, ["train-xid-2", "train-xid-1"]),
])
def test_filters_select_the_incidents_a_user_asks_for(client: Client, params: dict[str, str],
                                                     expected: list[str]) -> None:
    assert _jobs(client, **params) == expected


def test_severity_filter_matches_each_incident_severity(client: Client, history: dict[str, Incident]) -> None:
    for severity in {i.severity for i in history.values()}:
        want = {i.job_id for i in history.values() if i.severity == severity}
        assert set(_jobs(client, severity=severity)) == want


def test_pages_walk_every_incident_once_newest_first(client: Client) -> None:
    seen: list[str] = []
    url: str | None = "/v1/incidents?limit=4"
    while url:
        body = client.get(url).json()
        assert body["total"] == 6
        seen += [i["job_id"] for i in body["items"]]
        url = body["next"]
    assert seen == _jobs(client)
    page = client.get("/v1/incidents", params={"limit": 2, "tag": "xid"}).json()
    assert "tag=xid" in page["next"] and page["total"] == 5


@pytest.mark.parametrize(("params", "status"), [
    ({"since": "yesterday"}, 400), ({"cursor": "not-a-cursor"}, 400), ({"limit": 0}, 422),
    ({"limit": 201}, 422), ({"state": "closed"}, 422),
    ({"q": "a\x00b"}, 400),  # found by schemathesis: PostgreSQL text cannot hold NUL
    ({"cursor": "WyIyMDI2LTEyLTA5VDEwOjMwOjAwKzAwOjAwIiwgIlx1MDAwMCJd"}, 400),  # a cursor whose id is NUL
])
def test_bad_queries_get_a_client_error_with_a_reason(client: Client, params: dict[str, Any],
                                                      status: int) -> None:
    r = client.get("/v1/incidents", params=params)
    assert r.status_code == status
    assert r.json()["detail"]


def test_incident_detail_has_the_diagnosis_and_its_revisions(client: Client,
                                                             history: dict[str, Incident]) -> None:
    oom = client.get(f"/v1/incidents/{history['train-oom-1'].id}").json()
    rc = oom["incident"]["diagnosis"]["root_cause"]
    assert (rc["rank"], rc["host"], rc["signature"]) == (37, "node004", "host.oom_killer")
    assert [r["revision"] for r in oom["revisions"]] == [1]
    revised = client.get(f"/v1/incidents/{history['train-xid-1'].id}").json()
    assert [r["revision"] for r in revised["revisions"]] == [1, 2]
    assert any("xid.79" in change for change in revised["revisions"][1]["changes"])
    assert client.get("/v1/incidents/inc-0000000000000000").status_code == 404
    assert client.get("/v1/incidents/inc-%00").status_code == 404


def test_stats_count_classes_weeks_and_repeat_hosts(client: Client) -> None:
    stats = client.get("/v1/stats").json()
    assert stats["total"] == 6
    assert [(s["signature"], s["count"]) for s in stats["top_signatures"]] == [
        ("xid.79", 3), ("xid.48", 2), ("host.oom_killer", 1)]
    weeks = {(w["cluster"], w["week"]): w["count"] for w in stats["by_cluster_week"]}
    assert weeks == {("c1", "2026-W48"): 1, ("c1", "2026-W49"): 2, ("c2", "2026-W50"): 1, ("k8s-a", "2026-W50"): 2}
    assert {(h["cluster"], h["host"], h["initiating"]) for h in stats["hosts"]} == {
        ("c1", "node001", 2), ("k8s-a", "node003", 2)}
    assert client.get("/v1/stats", params={"cluster": "c2"}).json()["hosts"] == []


def test_offenders_rank_hardware_hosts_and_suggest_a_drain(client: Client) -> None:
    found = client.get("/v1/offenders").json()
    by_host = {(o["cluster"], o["host"]): o for o in found}
    assert set(by_host) == {("k8s-a", "node003"), ("c1", "node001")}  # node004's OOM is not hardware
    slurm = by_host["c1", "node001"]
    assert slurm["drain"] == 'scontrol update nodename=node001 state=drain reason="firstfault: xid.79 in 2 jobs"'
    assert [(g["pci"], g["jobs"]) for g in slurm["gpus"]] == [("0000:3b:00", 2)]
    assert by_host["k8s-a", "node003"]["drain"] == "kubectl cordon node003"
    assert by_host["k8s-a", "node003"]["signatures"] == ["xid.48", "xid.79"]
    once = client.get("/v1/offenders", params={"min_jobs": 1}).json()
    assert ("c2", "node002") in {(o["cluster"], o["host"]) for o in once}


def test_catalog_browsing(client: Client) -> None:
    xids = client.get("/v1/catalog", params={"tag": "xid"}).json()
    assert xids and all("xid" in e["tags"] for e in xids)
    hits = client.get("/v1/catalog", params={"q": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus"})
    assert "xid.79" in [e["id"] for e in hits.json()]
    entry = client.get("/v1/catalog/xid.79").json()
    assert entry["id"] == "xid.79" and entry["verification"]
    assert client.get("/v1/catalog/no.such").status_code == 404


def test_reads_are_open_and_writes_need_the_token(client: Client) -> None:
    assert client.get("/v1/incidents").status_code == 200
    job = {"job_id": "j-new", "state": "failed"}
    assert client.post("/v1/jobs", json=job).status_code == 401
    assert client.post("/v1/jobs", json=job, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 202


def test_openapi_publishes_the_history_with_response_models(client: Client) -> None:
    spec = client.get("/openapi.json").json()
    ok = spec["paths"]["/v1/incidents"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/IncidentList"}
    for path in ("/v1/incidents/{incident_id}", "/v1/stats", "/v1/offenders", "/v1/catalog",
                 "/v1/catalog/{signature_id}"):
        assert "200" in spec["paths"][path]["get"]["responses"]
    assert "/incidents" not in spec["paths"]  # the web pages are not part of the API


def test_a_job_s_latest_event_is_read_back_for_followers(client: Client, store: Store) -> None:
    """GET /v1/jobs/{id}: what `ship --follow` polls to learn that the job ended."""
    from datetime import UTC, datetime

    from schemas.wire import JobEvent

    assert client.get("/v1/jobs/follow-me").status_code == 404
    store.record_job(JobEvent(job_id="follow-me", state="started", world_size=8), datetime.now(UTC))
    assert client.get("/v1/jobs/follow-me").json()["state"] == "started"
    store.record_job(JobEvent(job_id="follow-me", state="failed", world_size=8), datetime.now(UTC))
    got = client.get("/v1/jobs/follow-me").json()
    assert (got["state"], got["world_size"]) == ("failed", 8)
