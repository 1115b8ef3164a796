"""Simulated jobs with a known answer: the initiator is found whatever the clocks say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main
from scan.engine import default_matcher, diagnose_sources, scan_sources
from simulate import Knobs, generate, oom_killed_rank
from sources.files import expand


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_silent_oom_killed_rank_37_of_64_under_five_minutes_of_skew(tmp_path: Path, seed: int) -> None:
    """Rank 37 is SIGKILLed by the OOM killer and prints nothing; 63 ranks time out and lose connections, with
    per-host clocks skewed by up to 5 minutes. The answer is rank 37, with the kernel's OOM kill as evidence."""
    truth = oom_killed_rank(tmp_path, world_size=64, victim=37, seed=seed)
    d = diagnose_sources(default_matcher(), expand([str(tmp_path)]), 2026)
    assert d.verdict == "diagnosed"
    assert d.root_cause is not None
    assert (d.root_cause.rank, d.root_cause.host) == (37, truth.host)
    assert "oom" in (d.root_cause.signature or "")
    assert any("Out of memory: Killed process" in e.text and e.source.endswith("dmesg.log")
               for e in d.root_cause.evidence)
    watchdog = [g for g in d.collateral if "watchdog" in g.signature]
    assert watchdog and len(set().union(*(set(g.ranks) for g in watchdog))) == 63
    assert 37 not in {r for g in d.collateral for r in g.ranks}


def test_the_same_job_interleaved_in_one_file(tmp_path: Path) -> None:
    """All ranks pasted into one file, lines prefixed with [rankN]: as torchrun --tee does."""
    truth = oom_killed_rank(tmp_path / "job", seed=5)
    merged = tmp_path / "all.log"
    with merged.open("w") as out:
        for path in truth.files:
            for line in path.read_text().splitlines():
                if path.name == "dmesg.log":
                    out.write(f"{truth.host}: {line}\n")
                elif line.startswith("[rank"):
                    out.write(line + "\n")
                else:
                    out.write(f"[{path.stem}]: {line}\n")
    d = diagnose_sources(default_matcher(), expand([str(merged)]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.rank == 37


def test_per_host_clock_offsets_are_removed_before_time_ordering(tmp_path: Path) -> None:
    """Eight hosts whose clocks are up to five minutes apart: after correction the watchdog timeouts every rank
    printed within two seconds line up again, and the kernel's OOM kill on the victim's host lands ten minutes
    before them, as it happened, though its printed clock says otherwise."""
    truth = generate("oom_killer", tmp_path, seed=4, knobs=Knobs(world_size=64, max_skew_s=300.0, cascade="timeout"))
    d = diagnose_sources(default_matcher(), expand([str(tmp_path)]), 2026)
    assert d.root_cause is not None and d.root_cause.rank == truth.rank and d.root_cause.time is not None
    waves = [e.time for e in d.timeline if e.role == "collateral" and e.signature.endswith("watchdog_timeout")]
    raw = [f.time for r in scan_sources(default_matcher(), expand([str(tmp_path)]), 2026).results
           for f in r.findings if f.signature.endswith("watchdog_timeout") and f.time]
    assert waves and all(t is not None for t in waves)
    corrected = sorted(t for t in waves if t is not None)
    assert (max(raw) - min(raw)).total_seconds() > 60  # the printed clocks disagree by minutes
    assert (corrected[-1] - corrected[0]).total_seconds() < 10
    gap = (corrected[len(corrected) // 2] - d.root_cause.time).total_seconds()
    assert 590 < gap < 615  # the watchdog's 600 s timeout, measured across two hosts' clocks


PRINTS = {
    "cuda_oom": {"cuda.oom"}, "oom_killer": {"host.oom_killer"}, "xid79": {"xid.79"},
    "ecc": {"cuda.ecc_uncorrectable"}, "sigsegv": {"torchrun.worker_segfault"},
    "straggler": {"pytorch.c10d.watchdog_timeout"}, "bootstrap_exception": {"data.file_not_found",
                                                                             "pytorch.store.wait_timeout"},
    "unknown_error": {"torchrun.worker_failed"}, "two_independent": {"cuda.oom", "xid.79"},
    "nic_failure": {"nccl.ib.retry_exceeded"}, "wrong_ifname": {"nccl.socket.no_route_to_host"},
    "store_master_death": {"pytorch.store.connection_closed"}, "slurm_node_failure": {"slurm.node_fail"},
    "job_config": set(),
}


@pytest.mark.parametrize("kind", sorted(PRINTS))
def test_the_simulator_prints_what_the_catalog_knows(kind: str, tmp_path: Path) -> None:
    """The simulator must not drift from the formats the catalog's verified examples pin down: the catalog
    recognises each scenario's own lines as the failure they are, and torchrun's table as torchrun's."""
    generate(kind, tmp_path, seed=3, knobs=Knobs(world_size=32))
    found = {f.signature for r in scan_sources(default_matcher(), expand([str(tmp_path)]), 2026).results
             for f in r.findings}
    assert PRINTS[kind] <= found
    if kind != "job_config":
        assert {"torchrun.root_cause_header", "torchrun.failure_rank_row"} <= found


def test_the_cli_reads_the_job_s_exit_codes_from_a_job_json_beside_the_logs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The kernel log and torchrun's tables were not collected; the scheduler's JobEvent (job.json) says rank 37
    was SIGKILLed while the rest were torn down: that is the answer, and the CLI finds it with no flag."""
    truth = generate("oom_killer", tmp_path, seed=2, knobs=Knobs(world_size=64, job_file=True))
    for path in list(tmp_path.rglob("dmesg.log")) + list(tmp_path.rglob("torchrun.log")):
        path.unlink()
    assert main(["diagnose", str(tmp_path), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["rank"], rc["host"]) == (truth.rank, truth.host)
    assert any("exit code -9" in step and "job metadata" in step for step in rc["explanation"])
