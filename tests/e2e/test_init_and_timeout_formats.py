"""Formats of failures at process-group setup and of older watchdog timeouts, each from its upstream source:
ProcessGroupNCCL's WorkNCCL printer before SeqNum/NumelIn existed (operator<<(WorkNCCL): "WorkNCCL(OpType=X,
TensorShape=[...], Timeout(ms)=N)"), NCCL's EHOSTUNREACH retries (2.24+ misc/socket.cc socketConnectCheck: "connect
returned %s, retrying (%d/%ld) after sleep for %u msec"), c10d's store-based barrier (distributed_c10d.py
_store_based_barrier) and Gloo's pairing timeout (gloo/transport/tcp/pair.cc: "Connect timeout [addr]:port")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause


def test_an_older_watchdog_timeout_is_a_waiting_rank_and_the_rank_with_a_cause_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f"[E ProcessGroupNCCL.cpp:566] [Rank {r}] Watchdog caught collective operation timeout: "
             f"WorkNCCL(OpType=ALLREDUCE, TensorShape=[2048, 512], Timeout(ms)=1800000) ran for 180{r}112 "
             "milliseconds before timing out." for r in (0, 1, 3)]
    lines.insert(0, "[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered")
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    assert cli_root_cause(log, capsys)["rank"] == 2


def test_an_older_watchdog_timeout_alone_is_read_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "train.log"
    log.write_text("[E ProcessGroupNCCL.cpp:566] [Rank 4] Watchdog caught collective operation timeout: "
                   "WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1806352 milliseconds before timing out.\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] == "pytorch.c10d.watchdog_timeout"
    assert float(str(rc["confidence"])) < 0.5  # a waiting rank, not a cause


def test_nccl_retrying_an_unreachable_peer_is_the_failure_when_nothing_else_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "worker.log"
    log.write_text("\n".join(f"gpu-b12:40211:40290 [0] NCCL INFO socketPollConnect: connect returned No route to host, "
                             f"retrying ({n}/34) after sleep for {n * 100} msec" for n in range(29, 35)) + "\n")
    assert cli_root_cause(log, capsys)["signature"] == "nccl.socket.no_route_retrying"


def test_the_store_based_barrier_timeout_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        '  File "/usr/lib/python3.8/site-packages/torch/distributed/distributed_c10d.py", line 627, in '
        "init_process_group",
        "    _store_based_barrier(rank, store, timeout)",
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 9, for key: "
        "store_based_barrier_key:1 (world_size=64, worker_count=56, timeout=0:30:00)"]) + "\n")
    assert cli_root_cause(log, capsys)["signature"] == "pytorch.c10d.store_barrier_timeout"


def test_a_gloo_pairing_timeout_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        "Traceback (most recent call last):",
        '  File "train.py", line 41, in <module>',
        "    dist.init_process_group(backend='gloo')",
        "RuntimeError: [/opt/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:611] Connect timeout "
        "[10.20.1.7]:21843"]) + "\n")
    assert cli_root_cause(log, capsys)["signature"] == "pytorch.gloo.connect_timeout"
