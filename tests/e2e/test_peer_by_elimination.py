"""A survivor's transport error names its peer by address ("socketProgress: Connection closed by remote peer
10.0.0.2<40318>": NCCL misc/socket.cc). Each host's NCCL says its own address at init ("Bootstrap : Using
eth0:10.0.0.1<0>": bootstrap.cc), but the host that died often never printed it. When every failing host but one
has told its address, the unknown address is that one's: it is named by name, not as a bare IP."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause


def _survivor(host: str, address: str, peer: str) -> str:
    return (f"{host}:6375:6375 [0] NCCL INFO Bootstrap : Using eno1:{address}<0>\n"
            f"{host}:6375:6388 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer "
            f"{peer}<40318>\n"
            f"{host}:6375:6388 [0] NCCL INFO misc/socket.cc:58 -> 6\n")


def _dying(host: str) -> str:
    # nccl-tests' report of an NCCL result on the host that failed first (a wrapper: its cause is elsewhere)
    return (f"{host}:9144:9179 [1] NCCL INFO bootstrap.cc:312 -> 3\n"
            f"{host}: Test NCCL failure common.cu:961 'internal error - please report this issue to the NCCL "
            "developers / '\n")


def test_the_one_failing_host_without_a_told_address_owns_the_peer_address(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gpu-b.log").write_text(_dying("gpu-b"))
    (tmp_path / "gpu-a.log").write_text(_survivor("gpu-a", "10.0.0.1", "10.0.0.2"))
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["host"] == "gpu-b"


def test_two_hosts_without_a_told_address_leave_the_address_unowned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gpu-b.log").write_text("gpu-b:9144:9179 [1] NCCL WARN NET/IB : Got async event : port error\n")
    (tmp_path / "gpu-c.log").write_text("gpu-c:7144:7179 [1] NCCL WARN NET/IB : Got async event : port error\n")
    (tmp_path / "gpu-a.log").write_text(_survivor("gpu-a", "10.0.0.1", "10.0.0.2"))
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["host"] not in ("gpu-b", "gpu-c")  # neither is guessed to own the address
