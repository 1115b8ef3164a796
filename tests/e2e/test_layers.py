"""A rank's own lines that weigh the same are read bottom-up: the device under the process fails first.

The kernel's Xid report names the GPU by PCI address (NVIDIA's driver: `NVRM: Xid (PCI:0000:3b:00): 79, pid=...,
GPU has fallen off the bus.`, as `dmesg -T` prints it); NCCL's init line names the same GPU's busId for the rank
(formats.nccl_init). The rank's watchdog then surfaces the lost device as a CUDA error (ProcessGroupNCCL.cpp:
`Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure`).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

JOB = F.Job(hosts=("gpu-c01", "gpu-c02"), per_host=4)


def test_an_xid_79_under_a_rank_is_the_cause_of_its_watchdogs_cuda_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sick = 6  # gpu-c02, local rank 2
    t = F.T0 + timedelta(minutes=3)
    bus = f"0000:{0x1b + 16 * JOB.local(sick):02x}:00"
    files: dict[str, list[str]] = {}
    for r in range(JOB.world):
        lines = [*F.nccl_init(JOB, r), *F.steps(r, F.T0)]
        if r == sick:
            lines.append(F.glog(r, "E", t + timedelta(seconds=1), "ProcessGroupNCCL.cpp:1595")
                         + f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread terminated with "
                         "exception: CUDA error: unspecified launch failure")
        else:
            lines.append(F.watchdog_timeout(r, t + timedelta(minutes=10), seq=4821))
        files.setdefault(f"{JOB.host(r)}/console.log", []).extend(lines)  # read before dmesg.log
    files["gpu-c02/dmesg.log"] = [f"[{t:%a %b %d %H:%M:%S %Y}] NVRM: Xid (PCI:{bus}): 79, pid={JOB.pid(sick)}, "
                                  "name=python3, GPU has fallen off the bus."]
    assert main(["diagnose", str(F.write(tmp_path, files)), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert rc["signature"] == "xid.79"
    assert rc["rank"] == sick and rc["host"] == "gpu-c02"
