"""deploy/grafana/firstfault.json queries only metrics `serve` exposes: a renamed metric breaks this test, not the
on-call's dashboard."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from api.app import create_app
from config.settings import Settings
from pipeline.embedded import EmbeddedRunner
from store.incidents import Store
from tests.api.server import serving

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "firstfault.json"
SUFFIXES = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("",), "gauge": ("",)}


def exposed(text: str) -> set[str]:
    """Every sample name a scrape can hold, from its TYPE lines (a labelled metric no one has touched yet still
    declares itself, with no samples)."""
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        names |= {name + suffix for suffix in SUFFIXES.get(kind, ("",))}
    return names


def queried() -> dict[str, set[str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    out: dict[str, set[str]] = {}
    for panel in dashboard["panels"]:
        assert panel["targets"], f"panel {panel['title']!r} queries nothing"
        for target in panel["targets"]:
            out.setdefault(panel["title"], set()).update(re.findall(r"\bfirstfault_[a-z_]+", target["expr"]))
    return out


def test_every_metric_the_dashboard_queries_is_in_a_scrape(sqlite_url: str) -> None:
    store = Store.open(sqlite_url)
    try:
        with serving(create_app(Settings(database_url=sqlite_url), EmbeddedRunner(), store)) as url:
            text = httpx.get(f"{url}/metrics", timeout=30).text
    finally:
        store.close()
    names = exposed(text)
    missing = {title: sorted(m - names) for title, m in queried().items() if m - names}
    assert not missing, f"the dashboard queries metrics no scrape has: {missing}"
    # and it shows what an operator alerts on (docs/operations.md "Metrics and health")
    shown = set().union(*queried().values())
    for alert_on in ("firstfault_ingest_rejected_total", "firstfault_consumer_lag", "firstfault_outbox_rows",
                     "firstfault_dead_letters_kept", "firstfault_notifications_total",
                     "firstfault_failure_to_incident_seconds_bucket", "firstfault_incident_to_post_seconds_bucket"):
        assert alert_on in shown, alert_on
