"""Failures users post that the catalog did not know (issue 22, pattern 6), diagnosed end to end.

Every fixture is written here in the format the software prints, each citing where that format comes from:
torch/_utils.py ExceptionWrapper ("Caught <type> in DataLoader worker process <id>." / "Original Traceback"),
HDF5 src/H5Fsuper.c via h5py ("Unable to synchronously open file (truncated file: ...)"),
torch/distributed/elastic/multiprocessing/api.py ("failed (exitcode: ...)", "Sending process ... closing signal"),
torch/distributed/checkpoint/state_dict_saver.py and utils.py (DCP's save and its gather), NVIDIA/nccl
src/include/socket.h v2.11 ("Net : Connect to %s failed : %s"), CPython's ModuleNotFoundError, Kubernetes'
job controller (pkg/controller/job/job_controller.go) and containerd's OOMKilled state.
"""

from __future__ import annotations

from pathlib import Path

from scan.engine import default_matcher, diagnose_sources, scan_sources
from sources.files import expand

_WORKER_TRACEBACK = """\
[rank{r}]: Traceback (most recent call last):
[rank{r}]:   File "/work/train.py", line 210, in train_one_epoch
[rank{r}]:     for step, batch in enumerate(loader):
[rank{r}]:   File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1480, in _next_data
[rank{r}]:     return self._process_data(data)
[rank{r}]:   File "/venv/lib/python3.11/site-packages/torch/_utils.py", line 733, in reraise
[rank{r}]:     raise exception
[rank{r}]: OSError: Caught OSError in DataLoader worker process 1.
[rank{r}]: Original Traceback (most recent call last):
[rank{r}]:   File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 349, in _worker_loop
[rank{r}]:     data = fetcher.fetch(index)
[rank{r}]:   File "/work/data/era5.py", line 88, in __getitem__
[rank{r}]:     with h5py.File(path, "r") as f:
[rank{r}]:   File "h5py/h5f.pyx", line 102, in h5py.h5f.open
[rank{r}]: OSError: Unable to synchronously open file (truncated file: eof = 2097152, sblock->base_addr = 0, \
stored_eof = 41943040)
"""

_GLOG = "{level}0301 10:00:41.100000 9001 site-packages/torch/distributed/elastic/multiprocessing/api.py:{line}] "
_TEARDOWN = [f"Sending process {pid} closing signal SIGTERM" for pid in (9100, 9101, 9102)]
_FAILED = "failed (exitcode: 1) local_rank: 2 (pid: 9103) of binary: /venv/bin/python"
_AGENT_TEARDOWN = "".join([_GLOG.format(level="W", line=897) + text + "\n" for text in _TEARDOWN]
                          + [_GLOG.format(level="E", line=869) + _FAILED + "\n"])


def test_a_truncated_data_file_on_one_rank_is_named_as_corrupt_data_not_a_python_exception(tmp_path: Path) -> None:
    """Rank 2's DataLoader worker opens a cut-short HDF5 file; the DataLoader re-raises it wrapped, and torchrun
    tears the other three ranks down. The answer names the data file as corrupt, on rank 2."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank2.log").write_text(_WORKER_TRACEBACK.format(r=2))
    for r in (0, 1, 3):
        (job / f"rank{r}.log").write_text(f"[rank{r}]: step 1200 loss 0.412\n")
    (job / "agent.log").write_text(_AGENT_TEARDOWN)
    d = diagnose_sources(default_matcher(), expand([str(job)]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.signature == "data.corrupt_file"
    assert d.root_cause.rank == 2
    assert "corrupt" in d.root_cause.title and "truncated" in d.root_cause.tags


def test_a_module_missing_on_every_rank_is_a_job_wide_environment_error(tmp_path: Path) -> None:
    """Every rank of the same image fails to import the same package at start-up: no rank is to blame."""
    job = tmp_path / "job"
    job.mkdir()
    for r in range(4):
        (job / f"rank{r}.log").write_text(
            f"[rank{r}]: Traceback (most recent call last):\n"
            f'[rank{r}]:   File "/work/train.py", line 3, in <module>\n'
            f"[rank{r}]:     import flash_attn\n"
            f"[rank{r}]: ModuleNotFoundError: No module named 'flash_attn'\n")
    d = diagnose_sources(default_matcher(), expand([str(job)]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.signature == "python.module_not_found"
    assert (d.root_cause.rank, d.root_cause.host) == (None, None)


def test_a_traceback_through_a_distributed_checkpoint_save_is_a_checkpoint_failure(tmp_path: Path) -> None:
    """Rank 0 sits in DCP's save waiting for the others' plans (gather_object) until its collective times out:
    the user is told it failed while checkpointing, not only that a collective timed out."""
    log = tmp_path / "rank0.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/work/torchtitan/trainer.py", line 998, in train\n'
        "[rank0]:     self.checkpointer.save(\n"
        '[rank0]:   File "/venv/lib/python3.12/site-packages/torch/distributed/checkpoint/state_dict_saver.py", '
        "line 164, in save\n"
        "[rank0]:     return _save_state_dict(\n"
        '[rank0]:   File "/venv/lib/python3.12/site-packages/torch/distributed/checkpoint/utils.py", line 181, in '
        "reduce_scatter\n"
        "[rank0]:     all_data = self.gather_object(local_data)\n"
        "[rank0]: torch.distributed.DistBackendError: [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=3002, OpType=GATHER, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 "
        "milliseconds before timing out.\n")
    d = diagnose_sources(default_matcher(), expand([str(log)]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.signature == "pytorch.checkpoint.save_failed"
    assert "checkpoint" in d.root_cause.tags


def test_an_nccl_connect_line_cut_short_still_reads_as_no_route_to_host(tmp_path: Path) -> None:
    """NCCL 2.10/2.11 print 'Net : Connect to <ip><port> failed : No route to host' from include/socket.h; a
    pasted log often cuts the line. The reader still learns the peer was unreachable, not just 'NCCL WARN'."""
    log = tmp_path / "node1.log"
    log.write_text("node1:4410:4433 [0] NCCL INFO Bootstrap : Using eth0:10.4.0.11<0>\n"
                   "node1:4410:4433 [0] include/socket.h:409 NCCL WARN Net : Connect to 10.4.0.12<51234> "
                   "failed : No route to\n")
    d = diagnose_sources(default_matcher(), expand([str(log)]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.signature == "nccl.socket.no_route_to_host"


def test_the_job_controller_giving_up_is_not_the_cause_the_oom_killed_pod_is(tmp_path: Path) -> None:
    """'kubectl describe job' ends with BackoffLimitExceeded; the pod's state says OOMKilled. The backoff is how
    the Job ended, the OOM kill is why."""
    log = tmp_path / "describe.txt"
    log.write_text(
        "    State:          Terminated\n"
        "      Reason:       OOMKilled\n"
        "      Exit Code:    137\n"
        "Events:\n"
        "  Type     Reason                Age   From            Message\n"
        "  ----     ------                ----  ----            -------\n"
        "  Warning  BackoffLimitExceeded  2m    job-controller  Job has reached the specified backoff limit\n")
    d = diagnose_sources(default_matcher(), expand([str(log)]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.signature == "k8s.oomkilled"
    assert any(g.signature == "k8s.job_backoff_limit" for g in d.collateral)


def test_a_worker_killed_by_sigbus_reads_as_shared_memory_even_without_its_own_log(tmp_path: Path) -> None:
    """Only the torchrun agent's lines were kept: local rank 1 ended with exitcode -7 (-SIGBUS), its siblings
    were sent SIGTERM. The exit code alone says bus error, which in a container is /dev/shm running out."""
    log = tmp_path / "agent.log"
    log.write_text(_GLOG.format(level="W", line=897) + "Sending process 44130 closing signal SIGTERM\n"
                   + _GLOG.format(level="E", line=869) + "failed (exitcode: -7) local_rank: 1 (pid: 44131) of binary: "
                   "/usr/bin/python3\n")
    d = diagnose_sources(default_matcher(), expand([str(log)]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.signature == "torchrun.worker_sigbus"
    assert "shm" in d.root_cause.tags and "dev_shm" in (d.fix or "") + " ".join(d.root_cause.tags)


def test_a_jobset_failing_and_deleting_its_pods_is_collateral_of_the_pod_that_failed(tmp_path: Path) -> None:
    """kubernetes-sigs/jobset's 'jobset failed due to one or more job failures (first failed job: ...)' and the job
    controller's 'Deleted pod:' events are how the JobSet ended; the evicted pod's kubelet message is why."""
    log = tmp_path / "events.txt"
    log.write_text(
        "  Warning  Evicted           3m    kubelet            The node was low on resource: memory. Threshold "
        "quantity: 100Mi, available: 51200Ki.\n"
        "  Warning  FailedJobs        2m    jobset-controller  jobset failed due to one or more job failures "
        "(first failed job: llm-workers-1)\n"
        "  Normal   SuccessfulDelete  2m    job-controller     Deleted pod: llm-workers-0-0-7x2kq\n")
    found = {f.signature for r in scan_sources(default_matcher(), expand([str(log)]), 2026).results
             for f in r.findings}
    assert {"k8s.evicted", "k8s.jobset_failed", "k8s.controller_deleted_pod"} <= found
    d = diagnose_sources(default_matcher(), expand([str(log)]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.signature == "k8s.evicted"
