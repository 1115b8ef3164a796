"""GPU-hours lost per failure class, cluster and ISO week (store/impact_stats.py), over the seeded history run
through the real pipeline: GET /v1/stats and `firstfault incidents stats`, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections import defaultdict

import httpx
import pytest

from firstfault.cli import main
from schemas.incident import Incident
from store.queries import iso_week


def _expected(history: dict[str, Incident]) -> dict[tuple[str | None, str | None, str], float]:
    sums: dict[tuple[str | None, str | None, str], float] = defaultdict(float)
    for inc in history.values():
        if inc.diagnosis.impact is not None:
            sums[inc.signature, inc.cluster, iso_week(inc.created_at)] += inc.diagnosis.impact.gpu_hours_lost
    return {k: round(v, 2) for k, v in sums.items()}


def test_the_api_sums_gpu_hours_per_class_cluster_and_week(client: httpx.Client,
                                                           history: dict[str, Incident]) -> None:
    expected = _expected(history)
    assert expected and any(v > 0 for v in expected.values())  # the seeded failures cost something
    rows = client.get("/v1/stats").json()["gpu_hours"]
    got = {(r["signature"], r["cluster"], r["week"]): r["gpu_hours_lost"] for r in rows}
    assert {k: v for k, v in got.items() if k in expected} == expected
    assert [r["gpu_hours_lost"] for r in rows] == sorted((r["gpu_hours_lost"] for r in rows), reverse=True)
    assert all(r["idle_gpu_hours"] + r["lost_work_gpu_hours"] == pytest.approx(r["gpu_hours_lost"], abs=0.02)
               for r in rows)


def test_the_cli_prints_them_and_filters_like_the_other_stats(capsys: pytest.CaptureFixture[str], engine_url: str,
                                                              history: dict[str, Incident]) -> None:
    assert main(["incidents", "stats", "--db", engine_url, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["gpu_hours"]
    biggest = rows[0]
    assert main(["incidents", "stats", "--db", engine_url, "--cluster", str(biggest["cluster"])]) == 0
    text = capsys.readouterr().out
    assert "GPU-hours lost by class, cluster and ISO week" in text and f"{biggest['gpu_hours_lost']:,.1f}" in text
    others = {r["cluster"] for r in rows} - {biggest["cluster"]}
    assert main(["incidents", "stats", "--db", engine_url, "--format", "json", "--cluster",
                 str(biggest["cluster"])]) == 0
    filtered = json.loads(capsys.readouterr().out)["gpu_hours"]
    assert {r["cluster"] for r in filtered} == {biggest["cluster"]} and not others & {r["cluster"] for r in filtered}


def test_the_incident_page_says_what_it_cost(client: httpx.Client, history: dict[str, Incident]) -> None:
    costed = next(inc for inc in history.values() if inc.diagnosis.impact and inc.diagnosis.impact.gpu_hours_lost)
    page = client.get(f"/incidents/{costed.id}").text
    assert f"Cost: ≈{costed.diagnosis.impact.gpu_hours_lost:,.1f} GPU-hours lost" in page  # type: ignore[union-attr]
