"""A node lost, and what the others print about it (issue 22, patterns 1, 4 and 5).

- torchrun's failure table re-prints the failed worker's traceback under the agent's own prefix (torch/distributed/
  elastic/multiprocessing/errors/__init__.py, _format_failure: `traceback : <the worker's error file>`); under
  `srun -l` that prefix is the node's task number. The row above says whose the lines are.
- A pod evicted before it printed a line still has a rank: its replica index, where every pod that prints its
  rank prints its index's (Kubeflow training-operator: worker i of a job without a master is rank i).
- A rank that reports losing a peer (NCCL's remote error, a reset socket) was in a collective with the dead peer:
  it is not the straggler absent from the collective the others time out in.
- A lost node that ran rank 0 ran the job's TCPStore (torchrun's agent of group rank 0 sets MASTER_ADDR to its
  host, elastic/agent/server/api.py _set_master_addr_port): its loss is rank 0's.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

PODS = F.Job(hosts=tuple(f"sft-worker-{i}" for i in range(8)), per_host=1)


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def _root(d: dict[str, object]) -> dict[str, object]:
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    return rc


def test_a_failure_tables_traceback_under_srun_task_labels_is_the_rows_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two nodes of eight workers under srun -l: task 1's agent prints rank 11's table, its traceback ending in a
    corrupt-file error. The error is rank 11's on node b, not task 1's "local rank 1"."""
    job = F.Job(hosts=("node-a", "node-b"))
    t = F.T0
    table = F.failure_table("train.py", f"{t:%Y-%m-%d_%H:%M:%S}", "node-b", 11, 3, 1, job.pid(11),
                            "Traceback (most recent call last):")
    table[-1:-1] = ['    File "/workspace/data.py", line 88, in __getitem__',
                    "  zlib.error: Error -3 while decompressing data: invalid stored block lengths"]
    lines = [f"0: {x}" for x in F.steps(0, t - timedelta(minutes=5))]
    lines += [f"1: {x}" for x in table]
    lines += [f"0: {x}" for x in [F.watchdog_timeout(r, t + timedelta(minutes=10), 512) for r in range(8)]]
    rc = _root(_diagnose(F.write(tmp_path, {"slurm-77.out": lines}), capsys))
    assert (rc["rank"], rc["host"]) == (11, "node-b"), rc["explanation"]


def _evicted_job(tmp_path: Path, victim: int) -> Path:
    """Pod `victim` evicted (kubectl describe: `Reason: Evicted`), its log empty; its ring neighbours report the
    lost peer at once, the rest time out in collective 1425 ten minutes later."""
    files: dict[str, list[str]] = {}
    for r in range(PODS.world):
        t = F.T0 + timedelta(minutes=10, milliseconds=20 * r)
        if r == victim:
            lines: list[str] = []
        elif r in ((victim - 1) % PODS.world, (victim + 1) % PODS.world):
            lines = [*F.remote_error(PODS, r, F.T0), *F.teardown(r, F.T0)]
        else:
            lines = [F.watchdog_timeout(r, t, 1425), F.watchdog_status(r, t, 1425, 1425, 1424), *F.teardown(r, t)]
        files[f"pods/{PODS.host(r)}.log"] = F.steps(r, F.T0 - timedelta(hours=1)) + lines
    pod = PODS.host(victim)
    files[f"describe/{pod}.txt"] = [f"Name:             {pod}", "Status:           Failed",
                                    "Reason:           Evicted",
                                    "Message:          The node was low on resource: memory. Threshold quantity: "
                                    "100Mi, available: 29879Ki."]
    return F.write(tmp_path, files)


def test_an_evicted_pod_that_printed_nothing_is_named_by_its_index_not_its_neighbour(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = _root(_diagnose(_evicted_job(tmp_path, 7), capsys))
    assert rc["signature"] == "k8s.evicted"
    assert (rc["rank"], rc["host"]) == (7, "sft-worker-7"), rc["explanation"]
    assert not any("absent from collective" in step for step in rc["explanation"]), rc["explanation"]


def test_a_lost_node_that_ran_rank_0_is_rank_0s_loss(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Slurm loses node-a (SchedMD/slurm: `srun: error: Node failure on %s`), which ran ranks 0-7 (their NCCL
    init lines say so); node-b's ranks lose their peers."""
    job = F.Job(hosts=("node-a", "node-b"))
    files = {f"{job.host(r)}/rank{r}.log": F.nccl_init(job, r) + F.steps(r, F.T0) for r in range(8)}
    for r in range(8, 16):
        files[f"{job.host(r)}/rank{r}.log"] = [*F.nccl_init(job, r), *F.remote_error(job, r, F.T0)]
    files["slurm-88.out"] = ["srun: error: Node failure on node-a"]
    rc = _root(_diagnose(F.write(tmp_path, files), capsys))
    assert rc["signature"] == "slurm.node_fail"
    assert (rc["rank"], rc["host"]) == (0, "node-a"), rc["explanation"]


def test_a_lost_node_without_rank_0_is_named_as_a_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = F.Job(hosts=("node-a", "node-b"))
    files = {f"{job.host(r)}/rank{r}.log": [*F.nccl_init(job, r), *F.remote_error(job, r, F.T0)] for r in range(8)}
    files |= {f"{job.host(r)}/rank{r}.log": F.nccl_init(job, r) + F.steps(r, F.T0) for r in range(8, 16)}
    files["slurm-88.out"] = ["srun: error: Node failure on node-b"]
    rc = _root(_diagnose(F.write(tmp_path, files), capsys))
    assert (rc["rank"], rc["host"]) == (None, "node-b"), rc["explanation"]


def _vanished_store_host(with_store_lines: bool) -> dict[str, list[str]]:
    """node-a (ranks 0-3, torchrun's group rank 0) stops mid-step with nothing more printed; node-b's and node-c's
    ranks lose their sockets to it, and their agents fail the rendezvous keep-alive (torch/distributed/elastic/
    rendezvous/dynamic_rendezvous.py _keep_alive: "The node '%s' has failed to send a keep-alive heartbeat to the
    rendezvous '%s' due to an error of type %s.")."""
    job = F.Job(hosts=("node-a", "node-b", "node-c"), per_host=4)
    files = {f"{job.host(r)}/rank{r}.log": F.nccl_init(job, r) + F.steps(r, F.T0) for r in range(4)}
    for r in range(4, 12):
        t = F.T0 + timedelta(seconds=3, milliseconds=20 * r)
        files[f"{job.host(r)}/rank{r}.log"] = [*F.nccl_init(job, r), F.conn_closed(job, r, "node-a"),
                                               *F.teardown(r, t)]
    if with_store_lines:
        for node, pid in (("node-b", 54795), ("node-c", 87916)):
            files[f"{node}/agent.log"] = [
                "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node "
                f"'{node}_{pid}_0' has failed to send a keep-alive heartbeat to the rendezvous 'j7' due to an error "
                "of type RendezvousConnectionError."]
    return files


def test_a_vanished_host_whose_store_the_others_lost_is_rank_0s(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """No line says node-a failed: the others' sockets to it closed and their agents lost the store that group rank
    0's host serves. The loss is rank 0's (its process served the store), on node-a."""
    rc = _root(_diagnose(F.write(tmp_path, _vanished_store_host(with_store_lines=True)), capsys))
    assert (rc["rank"], rc["host"]) == (0, "node-a"), rc["explanation"]


def test_a_vanished_host_without_a_lost_store_is_named_as_a_host(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The same vanished node with no store lost: which of its four ranks went first, nothing says."""
    rc = _root(_diagnose(F.write(tmp_path, _vanished_store_host(with_store_lines=False)), capsys))
    assert (rc["rank"], rc["host"]) == (None, "node-a"), rc["explanation"]
