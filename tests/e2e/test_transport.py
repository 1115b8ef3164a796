"""Transport errors on survivors are collateral of the death that caused them (issue 22, pattern 4).

When a rank dies, every rank that talked to it reports the loss: IB work completions in error (status 12, retry
exceeded), ncclRemoteError, sockets reset or closed by the peer. Those lines are printed by healthy ranks about a
dead peer (NVIDIA/nccl src/transport/net_ib.cc, src/misc/socket.cc, src/init.cc ncclGetErrorString). Formats in
tests/e2e/formats.py, each with its upstream source.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from correlator import calibration
from firstfault.cli import main
from tests.e2e import formats as F

JOB = F.Job()
VICTIM = 5  # on gpu-a01, local rank 5


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _survivors(ib: bool = True) -> dict[str, list[str]]:
    """Ranks 8-15 lose their IB connections to the victim's host; every survivor's watchdog then reports
    ncclRemoteError. Their clocks run a little ahead of the victim's host: the transport errors read earliest."""
    files: dict[str, list[str]] = {}
    for r in range(JOB.world):
        lines = F.nccl_init(JOB, r) + F.steps(r, F.T0)
        if r != VICTIM:
            t = F.T0 - timedelta(seconds=4) + timedelta(milliseconds=40 * r)
            if ib and JOB.host(r) != JOB.host(VICTIM):
                lines.append(F.ib_retry_exceeded(JOB, r, JOB.host(VICTIM)))
            lines += F.remote_error(JOB, r, t) + F.teardown(r, t)
        files[f"{JOB.host(r)}/rank{r}.log"] = lines
    return files


def test_sigkilled_rank_wins_over_the_ib_errors_and_remote_errors_of_15_survivors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 5 is SIGKILLed (torchrun's agent reports exitcode -9 for it); its log just stops. Eight survivors on
    the other host print IB retry-exceeded completions naming its host's address, all fifteen print
    ncclRemoteError. The answer is rank 5 on gpu-a01, and the IB completions are collateral."""
    files = _survivors()
    files["gpu-a01/torchrun.log"] = F.agent_failure(JOB, "gpu-a01", VICTIM, -9, F.T0 + timedelta(seconds=2))
    d = _diagnose(F.write(tmp_path, files), capsys)
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert (rc["rank"], rc["host"]) == (VICTIM, "gpu-a01"), rc["explanation"]
    assert "sigkill" in str(rc["signature"])
    collateral = {g["signature"]: g for g in d["collateral"]}  # type: ignore[attr-defined]
    assert set(collateral["nccl.ib.retry_exceeded"]["ranks"]) == set(range(8, 16))
    assert VICTIM not in {r for g in collateral.values() for r in g["ranks"]}


def test_an_oom_kill_in_the_victim_s_kernel_log_wins_over_the_survivors_transport_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same job with no launcher report: only gpu-a01's kernel log says the OOM killer took rank 5's pid."""
    files = _survivors()
    files["gpu-a01/dmesg.log"] = F.dmesg_oom(JOB.pid(VICTIM), F.T0 - timedelta(seconds=6))
    d = _diagnose(F.write(tmp_path, files), capsys)
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert (rc["rank"], rc["host"]) == (VICTIM, "gpu-a01"), rc["explanation"]
    assert "oom" in str(rc["signature"])
    assert any("Killed process" in e["text"] for e in rc["evidence"])


def test_accept_failures_on_survivors_do_not_take_the_oom_kill_of_their_peer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NCCL_DEBUG=WARN (no init lines: no pid or address maps): fifteen survivors print `socketTryAccept: Accept
    failed: Software caused connection abort` (ECONNABORTED, NVIDIA/nccl src/misc/socket.cc) and ncclRemoteError
    about the peer that died; gpu-a01's kernel log shows the OOM killer. The fault is gpu-a01's OOM kill, and no
    survivor (a rank whose only lines are about losing its peer) is named for it."""
    files: dict[str, list[str]] = {}
    for r in range(JOB.world):
        lines = F.steps(r, F.T0)
        if r != VICTIM:
            t = F.T0 - timedelta(seconds=4) + timedelta(milliseconds=40 * r)
            lines += [F.nccl(JOB, r, "WARN", "socketTryAccept: Accept failed: Software caused connection abort"),
                      *F.remote_error(JOB, r, t)]
        files[f"{JOB.host(r)}/rank{r}.log"] = lines
    files["gpu-a01/dmesg.log"] = F.dmesg_oom(JOB.pid(VICTIM), F.T0 - timedelta(seconds=6))
    d = _diagnose(F.write(tmp_path, files), capsys)
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert rc["host"] == "gpu-a01" and rc["rank"] in (None, VICTIM), rc["explanation"]
    assert "oom" in str(rc["signature"])
    accepts = [g for g in d["collateral"] if g["signature"] == "nccl.socket.accept_failed"]  # type: ignore[attr-defined]
    assert accepts and set(accepts[0]["ranks"]) == set(range(JOB.world)) - {VICTIM}


def test_with_only_transport_errors_the_reporter_is_not_the_suspect(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only gpu-a02's logs arrived, and its ranks report `Call to recv failed : Connection reset by peer` (NCCL
    before 2.8, src/include/socket.h: no address) and ncclRemoteError. The peer that reset the connections is
    not in these logs: the answer names neither gpu-a02 nor one of its ranks (how sure that is, is the
    calibration's to say)."""
    files = {}
    for r in range(8, 16):
        t = F.T0 + timedelta(milliseconds=40 * r)
        files[f"gpu-a02/rank{r}.log"] = [*F.steps(r, F.T0), F.nccl(JOB, r, "WARN", "Call to recv failed : Connection "
                                         "reset by peer"), *F.remote_error(JOB, r, t), *F.teardown(r, t)]
    rc = _diagnose(F.write(tmp_path, files), capsys)["root_cause"]
    assert isinstance(rc, dict)
    assert (rc["rank"], rc["host"]) == (None, None), rc["explanation"]
    assert rc["signature"] != "pytorch.c10d.async_error_teardown"  # the transport line, not the banner after it


def test_a_connect_failure_names_the_unreachable_peer_not_the_node_that_tried(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`Net : Connect to <ip><port> failed : No route to host` on the only node whose logs are here: the
    unreachable side is the peer's address, which no log maps to a host name. The answer rests on the trying
    node's word alone (the peer printed nothing): calibration never gives such an answer 0.9 or more
    (CAP_UNCONFIRMED); within that the fitted model decides, and on the tuning half every answer resting only on
    others' blame of a named rank or host was right (3 of 3, at 0.73-0.83), so no tighter cap is asserted."""
    files = {"rank0.log": [*F.nccl_init(JOB, 0), F.connect_failed(JOB, 0, "10.20.7.41", "No route to host")]}
    rc = _diagnose(F.write(tmp_path, files), capsys)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["host"] == "10.20.7.41" and rc["rank"] is None, rc["explanation"]
    assert float(rc["confidence"]) <= calibration.CAP_UNCONFIRMED < 0.9


def test_a_host_named_only_by_the_host_that_every_other_host_lost_is_not_the_suspect(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-b02's NIC fails. Every one of its 16 ranks loses its IB connection to its peer on gpu-b01 and prints
    a retry-exceeded completion naming gpu-b01's address (NVIDIA/nccl src/transport/net_ib.cc `Got completion from
    peer %s with status=12`); the ranks on gpu-b01 and gpu-b03 that talked to gpu-b02 name gpu-b02. gpu-b01 is
    named by one host, gpu-b02 by two: gpu-b01's 16 accusers are gpu-b02's own view of its dead link, and the
    suspect is gpu-b02."""
    job = F.Job(hosts=("gpu-b01", "gpu-b02", "gpu-b03"), per_host=16)
    files: dict[str, list[str]] = {}
    t = F.T0
    for r in range(job.world):
        lines = F.nccl_init(job, r) + F.steps(r, t)
        host = job.host(r)
        if host == "gpu-b02":
            lines.append(F.ib_retry_exceeded(job, r, "gpu-b01"))
        elif r in (0, 40):
            lines.append(F.ib_retry_exceeded(job, r, "gpu-b02"))
        lines += F.remote_error(job, r, t) + F.teardown(r, t)
        files[f"{host}/rank{r}.log"] = lines
    d = _diagnose(F.write(tmp_path, files), capsys)
    rc = d["root_cause"]
    suspects = d.get("suspects") or []
    top = rc["host"] if isinstance(rc, dict) and rc.get("host") else suspects[0]["host"]  # type: ignore[index]
    assert top == "gpu-b02", (rc, suspects)


def test_a_rank_singled_out_only_by_its_ib_error_about_an_unmapped_peer_is_not_a_confident_answer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NCCL_DEBUG=WARN: no `Using` line maps an address to a host. Of two hosts' logs, rank 9 alone prints an IB
    work completion in error (net_ib.cc, status 12: the peer's HCA stopped answering) about a peer no log names,
    and aborts as every survivor does (torchrun's table: exitcode -6); the peer's node, a third, went silent and
    left no log. The reporter's own HCA or link may be at fault, or the peer's node: a coin between two, so the
    answer, if it names rank 9, stays under the 0.7 that reads as confident."""
    files: dict[str, list[str]] = {}
    t = F.T0 + timedelta(seconds=1)
    for r in range(JOB.world):
        lines = [*F.steps(r, F.T0)]
        if r == 9:
            lines.append(F.nccl(JOB, r, "WARN", "NET/IB : Got completion from peer 10.1.123.58<51633> with "
                                                "status=12 opcode=0 len=0 vendor err 129 (Recv)"))
        lines += [*F.remote_error(JOB, r, t), *F.teardown(r, t),
                  "terminate called after throwing an instance of 'c10::DistBackendError'"]  # the watchdog's abort
        files[f"{JOB.host(r)}/rank{r}.log"] = lines
    files["gpu-a02/torchrun.log"] = F.agent_failure(JOB, "gpu-a02", 9, -6, t + timedelta(seconds=2))
    files["gpu-a01/torchrun.log"] = F.agent_failure(JOB, "gpu-a01", 0, -6, t + timedelta(seconds=2))
    rc = _diagnose(F.write(tmp_path, files), capsys)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["rank"] != 9 or float(rc["confidence"]) < 0.7, rc["explanation"]


def test_a_paste_of_the_reporters_own_ib_errors_keeps_it_the_lead(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only the reporter's output is here (an issue's paste): its IB completions in error about a peer no log names
    leave it the lead, as the real tuning halves' labels had it (2 of 2), not a coin held under 0.7."""
    lines = [*F.steps(9, F.T0)] + [F.nccl(JOB, 9, "WARN", f"NET/IB : Got completion from peer 10.1.123.58<5163{i}> "
                                                          "with status=12 opcode=0 len=0 vendor err 129 (Recv)")
                                   for i in range(2)]
    rc = _diagnose(F.write(tmp_path, {"rank9.log": lines}), capsys)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["rank"] == 9 and float(rc["confidence"]) >= 0.7, rc["explanation"]
