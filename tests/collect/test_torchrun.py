"""`firstfault collect torchrun` after a failed run, against a local ingest server and the embedded service."""

from __future__ import annotations

from pathlib import Path

import pytest

from firstfault.cli import main
from tests.collect import torchrun_files as T
from tests.fakes.ingest_api import FakeIngest


def _collect(url: str, log_dir: Path, *extra: str) -> int:
    return main(["collect", "torchrun", "--job", "77123", "--url", url, "--log-dir", str(log_dir),
                 "--host", T.HOST, *extra])


def test_the_failed_attempt_s_files_arrive_with_global_ranks_and_the_host(tmp_path: Path, ingest: FakeIngest,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    log_dir, agent, prefix = T.make(tmp_path)
    assert _collect(ingest.base, log_dir, "--agent-log", str(agent), "--fr-prefix", prefix,
                    "--state", "failed") == 0
    got = ingest.sources()
    logs = {name: (rank, host, stream) for name, (rank, host, stream, _) in got.items() if "/attempt_" in name}
    assert logs == {f"{T.RUN}/attempt_1/{local}/{f}.log": (4 + local, T.HOST, f) for local in range(4)
                    for f in ("stdout", "stderr")} | {
        f"{T.RUN}/attempt_1/{T.VICTIM_LOCAL}/error.json": (T.VICTIM, T.HOST, "stderr")}
    # the error file arrives as the lines the worker printed: the exception is a line of its own
    error = got[f"{T.RUN}/attempt_1/{T.VICTIM_LOCAL}/error.json"][3].decode()
    assert T.OOM in error.splitlines() and error.startswith("Traceback (most recent call last):")
    # this node's dumps, whole and unchanged; not rank 0's (another node) nor the stale rank 7
    dumps = {name: (rank, stream, data) for name, (rank, _, stream, data) in got.items() if "nccl_trace" in name}
    assert dumps == {f"nccl_trace_rank_{r}": (r, "nccl", T.dump(r)) for r in (4, 5, 6)}
    assert got["torchrun.log"][:3] == (None, T.HOST, "stderr")
    [event] = ingest.jobs
    assert (event.state, event.world_size, event.hosts) == ("failed", 8, [T.HOST])
    assert event.rank_hosts == {r: T.HOST for r in range(4, 8)} and event.exit_codes == {"6": 1}


def test_without_the_agent_log_the_node_rank_numbers_the_workers(tmp_path: Path, ingest: FakeIngest,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    log_dir, _, _ = T.make(tmp_path)
    assert _collect(ingest.base, log_dir, "--node-rank", "1", "--fr-prefix", str(tmp_path / "none_")) == 0
    ranks = {name: rank for name, (rank, *_) in ingest.sources().items()}
    assert ranks[f"{T.RUN}/attempt_1/3/stderr.log"] == 7 and ranks[f"{T.RUN}/attempt_1/0/stdout.log"] == 4
    assert ingest.jobs == []  # no --state: a multi-node job's event is sent once, by one node or the scheduler


def test_a_service_that_is_down_fails_the_collector_within_its_timeout(tmp_path: Path, ingest: FakeIngest,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    log_dir, _, _ = T.make(tmp_path)
    ingest.down = True
    assert _collect(ingest.base, log_dir, "--node-rank", "1", "--timeout", "5") == 1
    assert "collect torchrun failed" in capsys.readouterr().err


def test_the_embedded_service_names_the_rank_that_ran_out_of_memory(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from config.settings import load_settings
    from firstfault.serve import build_embedded
    from tests.api.server import serving
    from tests.integration.celery_worker import wait_for

    monkeypatch.delenv("FIRSTFAULT_API_TOKEN", raising=False)
    log_dir, agent, prefix = T.make(tmp_path)
    settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": f"sqlite:///{tmp_path / 'ff.db'}",
                                      "FIRSTFAULT_GROUP_WAIT_S": "1"}, path="/dev/null")
    service = build_embedded(settings)
    service.runner.start()
    try:
        with serving(service.app) as url:
            assert _collect(url, log_dir, "--agent-log", str(agent), "--fr-prefix", prefix, "--state", "failed") == 0
            incident = wait_for(lambda: service.store.incident_for_job("77123"), 30, "the incident")
    finally:
        service.runner.stop()
        service.store.close()
    assert (incident.rank, incident.host) == (T.VICTIM, T.HOST)
    assert "oom" in (incident.signature or "").lower() or "memory" in (incident.signature or "").lower()
