"""Logs as a collector hands them over, with its own timestamp before every line: `kubectl logs --timestamps` and
`docker logs -t` (RFC 3339 with nanoseconds, then a space), the kubelet's CRI log files under /var/log/pods
("<time> <stdout|stderr> <P|F> <line>": kubernetes pkg/kubelet/kuberuntime/logs/logs.go), and collectors that end
the stamp with ": ". The launcher's prefixes sit behind the stamp and still say who printed each line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

T0 = datetime(2026, 11, 29, 10, 2, 3, tzinfo=UTC)


def _stamp(at: datetime, style: str) -> str:
    nanos = at.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123"
    return {"kubectl": f"{nanos}Z ", "cri": f"{nanos}Z stderr F ", "crio": f"{nanos}+00:00 stdout F ",
            "colon": at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z: "}[style]


def _job(style: str) -> list[str]:
    """One node's torchrun output (global ranks 8-11 behind `[rankN]:`): rank 10 hits a CUDA fault, the others'
    watchdogs time out on the collective it never joined."""
    lines = [(T0, f"[rank{r}]:step 4100 loss 1.9{r}") for r in range(8, 12)]
    lines += [
        (T0 + timedelta(seconds=5), "[rank10]:RuntimeError: CUDA error: an illegal memory access was encountered"),
        (T0 + timedelta(seconds=5), "[rank10]:CUDA kernel errors might be asynchronously reported at some other API "
                                    "call, so the stacktrace below might be incorrect."),
    ]
    for r in (8, 9, 11):
        lines.append((T0 + timedelta(seconds=605), f"[rank{r}]:[E1129 10:12:08.201934417 ProcessGroupNCCL.cpp:632] "
                      f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8812, "
                      "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600081 "
                      "milliseconds before timing out."))
    return [_stamp(at, style) + text for at, text in lines]


@pytest.mark.parametrize("style", ["kubectl", "cri", "crio", "colon"])
def test_the_rank_behind_a_collectors_stamp_is_named(style: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "trainer-node-2.log"
    log.write_text("\n".join(_job(style)) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["rank"] == 10
    assert "cuda" in str(rc["signature"])


def test_mpirun_tags_behind_a_collectors_stamp_name_the_node_of_an_adapter_fault(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the same IB adapter error seen by the three ranks of one node at once (NCCL's net_ib async event thread):
    # the node's fault, not one rank's
    lines = [_stamp(T0, "colon") + f"[1,{r}]<stdout>:step 830000 loss 0.4{r}" for r in range(12, 16)]
    for r in (12, 13, 14):
        lines.append(_stamp(T0 + timedelta(seconds=1), "colon") + f"[1,{r}]<stdout>:gpu-node-57:81{r}:86{r} [0] "
                     "transport/net_ib.cc:80 NCCL WARN NET/IB : Got async event : local catastrophic error")
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["host"] == "gpu-node-57"
    assert rc["rank"] is None
