"""A job-wide fault that one rank alone printed, while the others failed otherwise, is that rank's (issue 22).

The store env:// and tcp:// rendezvous use is started by rank 0 alone (pytorch/pytorch
torch/distributed/rendezvous.py, _create_c10d_store: `start_daemon = rank == 0`). When its port is taken, rank 0
prints the server's failure (torch/csrc/distributed/c10d/socket.cpp: `The server socket has failed to bind to
{}:{} (errno: {} - {}).`, then `The server socket has failed to listen on any local network address.`) and every
other rank that its client cannot connect (`The client socket has failed to connect to [{}]:{} (errno: {} - {}).`).
The catalog files the bind failure as the job's (a port every run of the job shares), but here it showed where rank 0
runs: rank 0 is named. Printed by every rank, it stays the job's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

WORLD = 4
MASTER = "gpu-a01"


def _bind_failed(rank: int) -> list[str]:
    t = F.T0
    return [f"{F.glog(rank, 'W', t, 'socket.cpp:464')} [c10d] The server socket has failed to bind to [::]:29500 "
            "(errno: 98 - Address already in use).",
            f"{F.glog(rank, 'E', t, 'socket.cpp:500')} [c10d] The server socket has failed to listen on any local "
            "network address."]


def _cannot_connect(rank: int) -> list[str]:
    return [f"{F.glog(rank, 'W', F.T0, 'socket.cpp:752')} [c10d] The client socket has failed to connect to "
            f"[{MASTER}]:29500 (errno: 111 - Connection refused)."]


def _diagnose(tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str]) -> dict[str, object]:
    assert main(["diagnose", str(F.write(tmp_path, {"mpirun.out": lines})), "--format", "json"]) == 0
    rc: dict[str, object] = json.loads(capsys.readouterr().out)["root_cause"]
    return rc


def test_a_bind_failure_only_rank_0_printed_is_rank_0s(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [line for rank in range(1, WORLD) for line in _cannot_connect(rank)] + _bind_failed(0)
    rc = _diagnose(tmp_path, capsys, lines)
    assert (rc["signature"], rc["rank"]) == ("pytorch.store.bind_failed", 0), rc["explanation"]


def test_a_bind_failure_every_rank_printed_names_no_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = _diagnose(tmp_path, capsys, [line for rank in range(WORLD) for line in _bind_failed(rank)])
    assert (rc["signature"], rc["rank"]) == ("pytorch.store.bind_failed", None), rc["explanation"]
