"""The host the workers' TCPStore clients lost is rank 0's, where no line places rank 0 (issue 22).

torch.distributed's env:// rendezvous serves the process group's store from rank 0
(pytorch/pytorch torch/distributed/rendezvous.py, _create_c10d_store: `start_daemon = rank == 0`; under torchrun
the agent store at MASTER_ADDR, which torchrun's agent of group rank 0 sets to its own host:
torch/distributed/elastic/agent/server/api.py _set_master_addr_port). A client that loses it prints the server's
address (torch/csrc/distributed/c10d/TCPStore.cpp / socket.cpp: `recvValue failed on SocketImpl(fd=N,
addr=[host]:port, remote=[host]:port): Connection reset by peer`). A host that vanished without a line, which
the others' store clients name, ran rank 0 even when no line of it says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

HOSTS = ("node00", "node01", "node02")


def _client_lost(rank: int, host: str, store: str) -> str:
    return (f"[rank{rank}]:[W1129 10:02:04.118273645 TCPStore.cpp:125] [c10d] recvValue failed on "
            f"SocketImpl(fd=102, addr=[{host}]:36787, remote=[{store}]:29500): Connection reset by peer")


def _job(store: str) -> dict[str, list[str]]:
    """Three nodes of two ranks; node00 printed nothing (its log is empty); every rank elsewhere loses the store
    at ``store``."""
    files: dict[str, list[str]] = {"node00/console.log": []}
    for n, host in enumerate(HOSTS[1:], start=1):
        files[f"{host}/console.log"] = [_client_lost(2 * n + i, host, store) for i in range(2)]
    return files


@pytest.mark.parametrize("store", ["node00"])
def test_the_lost_store_host_is_rank_0s(tmp_path: Path, capsys: pytest.CaptureFixture[str], store: str) -> None:
    assert main(["diagnose", str(F.write(tmp_path, _job(store))), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["rank"], rc["host"]) == (0, store), rc["explanation"]

