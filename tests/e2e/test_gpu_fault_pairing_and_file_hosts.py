"""One GPU failure seen from two sides, and a log file's name that is not its host, written from upstream formats.

- The driver logs an Xid on the node naming the GPU by bus id ("NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>',
  name=<unknown>, GPU has fallen off the bus.", NVIDIA's Xid catalog; journalctl -k's short format prefixes
  "<Mon DD HH:MM:SS> <host> kernel: "), and the process on that GPU gets cudaErrorLaunchFailure back ("CUDA error:
  unspecified launch failure", c10/cuda/CUDAException.h's message for the CUDA runtime's error string). horovodrun's
  gloo launcher prefixes each rank's stream "[<rank>]<stderr>:" (horovod/runner/common/util/safe_shell_exec.py)
  and names no host, so nothing but the pair ties the rank to the node.
- Slurm's --output filename pattern "%x-%j-%n.out" (sbatch(1): job name, job id, node index relative to the job)
  names a file per node by its index; NCCL's INFO lines inside it print the node's hostname ("<host>:<pid>:<tid>
  [<dev>] NCCL INFO ...", src/debug.cc)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

_TRACE = ["Traceback (most recent call last):", '  File "/workspace/train.py", line 251, in train_one_epoch',
          "    loss.backward()", "RuntimeError: CUDA error: unspecified launch failure"]
_XID = ("Apr 24 11:26:01 {host} kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
        "fallen off the bus.")


def _horovod_job(tmp_path: Path, failing: list[int], xid_host: str = "a100-06") -> None:
    lines = [f"[{rank}]<stderr>:{text}" for rank in failing for text in _TRACE]
    lines += ["[3]<stderr>:horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: remote process "
              "exited or there was a network error", f"Process {failing[0]} exit with status code 1.",
              f"Terminating remaining workers after failure of Process {failing[0]}."]
    (tmp_path / "horovodrun.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "journal").mkdir()
    loading = f"Mar 19 00:32:03 {xid_host} kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.129.03"
    (tmp_path / "journal" / "10.175.217.81.log").write_text(f"{loading}\n{_XID.format(host=xid_host)}\n")


def test_the_nodes_xid_and_the_ranks_cuda_error_are_one_failure(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _horovod_job(tmp_path, [2])
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.79", 2, "a100-06")


def test_two_ranks_with_cuda_errors_leave_the_xid_unpaired(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _horovod_job(tmp_path, [2, 5])  # which of the two used the GPU that fell off is not in these logs
    rc = cli_root_cause(tmp_path, capsys)
    assert not (rc["signature"] == "xid.79" and rc["rank"] in (2, 5))


def test_a_rank_known_on_another_host_is_not_paired(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _horovod_job(tmp_path, [2])
    with (tmp_path / "horovodrun.log").open("a") as log:  # NCCL's header puts rank 2 on a100-07
        log.write("[2]<stderr>:a100-07:4242:4300 [0] NCCL INFO comm 0x55d5 rank 2 nranks 4 cudaDev 0 nvmlDev 0 "
                  "busId 1b000 commId 0x3d13a9a11 - Init COMPLETE\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert not (rc["rank"] == 2 and rc["host"] == "a100-06")


def test_a_file_named_by_slurms_node_index_reports_the_host_its_lines_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "logs").mkdir()
    for node, host in enumerate(("trn-c-60", "trn-c-61")):
        lines = [f"[rank{4 * node + r}]:{host}:{3834048 + r}:{3834085 + r} [{r}] NCCL INFO comm 0x55d550120 rank "
                 f"{4 * node + r} nranks 8 cudaDev {r} nvmlDev {r} busId {r + 1}b000 commId 0x3d13a9a11 - Init "
                 "COMPLETE" for r in range(4)]
        if node == 1:
            lines += [f"[rank5]:{text}" for text in _TRACE]
        (tmp_path / "logs" / f"gpt-4002729-{node}.out").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["rank"], rc["host"]) == (5, "trn-c-61")


# ProcessGroupNCCL's watchdog carries the CUDA error it caught (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:
# "Process group watchdog thread terminated with exception: " + the exception's what(), here c10's CUDA error), under
# srun --label's "%0*d: " task prefix (SchedMD/slurm src/common/write_labelled_message.c). The kernel's PCIe AER
# service reports the uncorrected error on the GPU's root port first (linux drivers/pci/pcie/aer.c,
# aer_print_port_info: "AER: Uncorrected (Fatal) error received: <device>"), then the driver its Xid 79.
_WATCHDOG = ("06: [E ProcessGroupNCCL.cpp:916] [Rank 6] Process group watchdog thread terminated with exception: "
             "CUDA error: unspecified launch failure")
_AER = ["[Thu Dec 10 17:42:30 2026] pcieport 0000:45:01.0: AER: Uncorrected (Fatal) error received: 0000:47:00.0",
        "[Thu Dec 10 17:42:30 2026] nvidia 0000:47:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Inaccessible, (Unregistered Agent ID)",
        "[Thu Dec 10 17:42:31 2026] NVRM: Xid (PCI:0000:47:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
        "off the bus."]


def test_the_watchdogs_carried_cuda_error_pairs_with_the_xid_and_the_aer_yields_to_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rank's CUDA error arrives inside the watchdog's line: read as that error before pairing. The AER came
    first, but the GPU falling off the bus is what failed (host.pcie_aer yields_to xid.79)."""
    (tmp_path / "slurm-5898844_4.out").write_text(
        "00: [rank: 0] Seed set to 42\n" + _WATCHDOG + "\n"
        "03: [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600044 "
        "milliseconds before timing out.\n")
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "hgx-r9-116.dmesg").write_text("\n".join(_AER) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.79", 6, "hgx-r9-116")


def test_an_aer_alone_is_still_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "hgx-r9-116.dmesg").write_text("\n".join(_AER[:2]) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["host"]) == ("host.pcie_aer", "hgx-r9-116")


def test_a_gke_nodes_xid_pairs_with_the_rank_of_the_one_pod_the_scheduler_put_there(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kubectl logs --prefix names the pod (kubernetes/kubectl pkg/cmd/logs/logs.go: "[pod/%s/%s] "), the node's
    journal names the node, and `kubectl get events` ties them: the scheduler's "Successfully assigned
    <namespace>/<pod> to <node>" (kubernetes pkg/scheduler/schedule_one.go)."""
    pod, node = "gemma-dpo-w9at-worker-5", "gke-train-gpu-pool-418df08f-9vwt"
    (tmp_path / "kubectl-logs.txt").write_text(
        f"[pod/{pod}/pytorch] 2026-12-09T22:41:07.518441792Z [default7]:[rank47]:[E1209 22:41:07.518441792 "
        "ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 47] Process group watchdog thread "
        "terminated with exception: CUDA error: unspecified launch failure\n")
    (tmp_path / "events.txt").write_text(
        "LAST SEEN   TYPE      REASON      OBJECT                            MESSAGE\n"
        f"72m         Normal    Scheduled   pod/{pod}   Successfully assigned default/{pod} to {node}\n"
        f"72m         Normal    Scheduled   pod/gemma-dpo-w9at-worker-4   Successfully assigned "
        "default/gemma-dpo-w9at-worker-4 to gke-train-gpu-pool-418df08f-abcd\n")
    (tmp_path / "nodes").mkdir()
    (tmp_path / "nodes" / f"{node}.log").write_text(
        f"Dec 09 22:41:05 {node} kernel: NVRM: Xid (PCI:0000:c5:00): 79, pid='<unknown>', name=<unknown>, GPU has "
        "fallen off the bus.\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.79", 47, pod)
