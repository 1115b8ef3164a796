"""The host a diagnosis names is the one the scheduler or launcher knows it by: a Kubernetes pod's name however a
line decorates it, the host a launcher failed to reach over SSH, and never a batch job's own output file. Fixtures
written by us in the formats upstream prints:

- Kubeflow training-operator pkg/controller.v1/common/pod.go (v1.8.1), ReconcilePods: "Pod: %v.%v exited with
  code %v" with the pod's namespace then its name;
- the kubelet's back-off (kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go, doBackOff): "back-off %s
  restarting failed container=%s pod=%s" with format.Pod, "<name>_<namespace>(<uid>)" (pkg/kubelet/util/format/
  pod.go);
- kubectl get pods (kubernetes pkg/printers/internalversion/printers.go, printPod): NAME READY STATUS RESTARTS AGE;
- ColossalAI's launcher (hpcaitech/ColossalAI colossalai/cli/launcher/multinode_runner.py, run_on_host): "Error:
  failed to run {cmds} on {hostname}, is localhost: {is_local_host}, exception: {e}";
- OpenSSH (openssh-portable sshconnect.c): "ssh: connect to host %s port %s: %s", behind pdsh's "host: " prefix;
- flux-core src/cmd/flux-batch.py: `flux batch` writes "flux-{{id}}.out", the id in F58; PBS Pro's default output
  "<job name>.o<sequence number>" (qsub(1B)).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from correlator.job_files import is_job_output
from scan.engine import default_matcher, diagnose_sources
from schemas.diagnosis import Diagnosis
from sources.files import expand

_UID = "2e06a4e3-bceb-42b4-b0fd-a32cb53d0d00"


def _diagnose(root: Path) -> Diagnosis:
    return diagnose_sources(default_matcher(), expand([str(root)]), 2026)


def _root(root: Path) -> tuple[str | None, int | None, str | None]:
    d = _diagnose(root)
    assert d.root_cause is not None
    return d.root_cause.signature, d.root_cause.rank, d.root_cause.host


def test_the_operators_namespace_dot_pod_names_the_pod(tmp_path: Path) -> None:
    """The namespace before the dot is no host: the pod after it is the one that failed."""
    (tmp_path / "training-operator.log").write_text(
        'time="2026-02-21T09:31:59Z" level=info msg="PyTorchJob=gpt-ft, ReplicaType=Worker expected=2, running=2, '
        'succeeded=0, failed=0, Replicas=2"\n'
        'time="2026-02-21T09:32:29Z" level=info msg="Reconciling for job gpt-ft"\n'
        'time="2026-02-21T09:32:29Z" level=info msg="Pod: research.gpt-ft-worker-1 exited with code 1" '
        "job=research.gpt-ft replica-type=worker uid=10bd2912-0996-4fcf-a95a-bb84135861f1\n")
    assert _root(tmp_path) == ("k8s.container_exit_error", None, "gpt-ft-worker-1")


def test_a_pod_that_exited_zero_is_no_failure(tmp_path: Path) -> None:
    (tmp_path / "training-operator.log").write_text(
        'time="2026-02-21T09:40:02Z" level=info msg="Pod: research.gpt-ft-master-0 exited with code 0" '
        "job=research.gpt-ft replica-type=master uid=10bd2912-0996-4fcf-a95a-bb84135861f1\n")
    d = _diagnose(tmp_path)
    assert d.root_cause is None or d.root_cause.signature != "k8s.container_exit_error"


def test_the_kubelets_back_off_names_the_pod_without_its_namespace_and_uid(tmp_path: Path) -> None:
    (tmp_path / "operator.log").write_text(
        "1.708507919323319e+09\tDEBUG\tevents\tError pod gpt-ft-worker-1 container pytorch waiting message: "
        f"back-off 40s restarting failed container=pytorch pod=gpt-ft-worker-1_research({_UID})\n")
    assert _root(tmp_path) == ("k8s.crashloop", None, "gpt-ft-worker-1")


def test_a_pod_listing_names_the_pod_in_error_not_the_running_one(tmp_path: Path) -> None:
    (tmp_path / "pods.txt").write_text(
        "NAME                 READY   STATUS    RESTARTS   AGE\n"
        "gpt-ft-master-0      1/1     Running   0          12m\n"
        "gpt-ft-worker-0      0/1     Error     0          12m\n"
        "gpt-ft-worker-1      1/1     Running   0          12m\n")
    assert _root(tmp_path) == ("k8s.container_exit_error", None, "gpt-ft-worker-0")


def test_colossalai_names_the_host_it_could_not_reach(tmp_path: Path) -> None:
    (tmp_path / "launch.log").write_text(
        "Error: failed to run torchrun --nproc_per_node=8 --nnodes=2 --node_rank=1 --rdzv_backend=c10d "
        "--rdzv_endpoint=10.0.0.5:29501 --rdzv_id=colossalai-default-job train.py on node-b07, is localhost: False, "
        "exception: No authentication methods available\n")
    assert _root(tmp_path) == ("launch.ssh_remote_run_failed", None, "node-b07")


def test_colossalais_bad_exit_code_is_no_ssh_failure(tmp_path: Path) -> None:
    """invoke's UnexpectedExit: the command ran on the host and failed there; SSH worked."""
    (tmp_path / "launch.log").write_text(
        "Error: failed to run torchrun --nproc_per_node=4 --nnodes=1 --node_rank=0 train.py on 127.0.0.1, "
        "is localhost: True, exception: Encountered a bad command exit code!\n")
    d = _diagnose(tmp_path)
    assert d.root_cause is None or d.root_cause.signature != "launch.ssh_remote_run_failed"


def test_an_ssh_connect_failure_under_pdsh_names_its_target(tmp_path: Path) -> None:
    (tmp_path / "deepspeed.log").write_text(
        "[2026-03-02 10:00:01,210] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w gpu-a11,gpu-a12 "
        "export PYTHONPATH=/work; cd /work; /usr/bin/python -u -m deepspeed.launcher.launch train.py\n"
        "gpu-a12: ssh: connect to host gpu-a12 port 22: No route to host\n"
        "pdsh@gpu-a11: gpu-a12: ssh exited with exit code 255\n")
    signature, _, host = _root(tmp_path)
    assert host == "gpu-a12"
    assert signature in ("launch.ssh_connect_failed", "pdsh.node_unreachable")


@pytest.mark.parametrize(
    ("name", "job"),
    [
        ("flux-ƒ2Bv8x7eB.out", True),  # F58, flux batch's default
        ("flux-f4o7pr7YYS5S.out", True),  # FLUX_F58_FORCE_ASCII
        ("flux-3799785836544.out", True),  # {{id.dec}}
        ("sft-8b.o6725635", True),  # PBS <job name>.o<seq>
        ("sft-8b.e6725635", True),
        ("train.o1234.7", True),  # an array subjob's
        ("node017.log", False),
        ("flux-node3.log", False),
        ("gpu-a12.out", False),
    ],
)
def test_a_schedulers_output_file_name_is_a_jobs(name: str, job: bool) -> None:
    assert is_job_output(name) is job


def test_a_job_output_files_name_is_not_reported_as_a_host(tmp_path: Path) -> None:
    """Every task's lines in one PBS output file, labelled by mpiexec -l ("[R] "): the file is the job's."""
    job = tmp_path / "sft-8b.o6725635"
    lines = [f"[{r}] [local_rank {r % 4}] world_size=8 device=cuda:{r % 4}" for r in range(8)]
    lines += ["[5] Traceback (most recent call last):", '[5]   File "/work/train.py", line 88, in <module>',
              "[5]     loss.backward()",
              "[5] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
              "capacity of 79.15 GiB of which 1.06 GiB is free."]
    job.write_text("\n".join(lines) + "\n")
    signature, rank, host = _root(tmp_path)
    assert (signature, rank) == ("cuda.oom", 5)
    assert host != "sft-8b"


def _cray_job(root: Path, hosts_name: str = "hosts") -> None:
    """A PBS job on an HPE Cray EX system: the hosts file pairs each node's xname with its nid (hosts(5): address,
    canonical name, aliases), the console log names the node by its nid only, mpiexec -l labels ranks "[R] "."""
    (root / hosts_name).write_text("10.140.12.68\tx3076c0s3b0n1.hsn.cluster.local x3076c0s3b0n1 nid001901\n"
                                   "10.140.20.12\tx3076c6s5b0n0.hsn.cluster.local x3076c6s5b0n0 nid008827\n")
    (root / "nodefile").write_text("x3076c0s3b0n1.hsn.cluster.local\nx3076c6s5b0n0.hsn.cluster.local\n")
    console = root / "console"
    console.mkdir()
    (console / "nid001901.log").write_text(
        "2027-07-18T07:57:16.765799+00:00 nid001901 kernel: [759951.147857] NVRM: loading NVIDIA UNIX Open Kernel "
        "Module for x86_64  560.35.03\n"
        "2027-07-18T07:57:17.765799+00:00 nid001901 kernel: [759952.147857] NVRM: Xid (PCI:0000:5d:00): 79, "
        "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    (console / "nid008827.log").write_text(
        "2027-07-18T07:57:16.765799+00:00 nid008827 kernel: [759951.147857] NVRM: loading NVIDIA UNIX Open Kernel "
        "Module for x86_64  560.35.03\n")


def test_a_hosts_file_makes_a_nodes_nid_and_xname_one_host_named_by_its_canonical_name(tmp_path: Path) -> None:
    _cray_job(tmp_path)
    signature, _, host = _root(tmp_path)
    assert (signature, host) == ("xid.79", "x3076c0s3b0n1")


def test_an_address_and_two_names_outside_a_hosts_file_join_nothing(tmp_path: Path) -> None:
    """The same lines in a file that is not a hosts file (a log that prints an address and two names) pair no
    names: the node keeps the name its own console gives it."""
    _cray_job(tmp_path, hosts_name="inventory.log")
    _, _, host = _root(tmp_path)
    assert host == "nid001901"


def test_a_pods_hostname_cut_to_63_characters_is_that_pod_named_in_full(tmp_path: Path) -> None:
    """The kubelet cuts a pod's hostname to 63 characters and trims the hyphen it ends with (kubernetes
    pkg/kubelet/kubelet_pods.go, truncatePodHostnameIfNeeded): NCCL prints the cut name, kubectl the pod's."""
    full = "llama3-70b-instruct-sft-ablation-lr3e-5-warmup2k-trainer-node-0-3-x7k2p"
    cut = full[:63].rstrip("-.")
    assert cut.endswith("node-0")
    (tmp_path / "worker.log").write_text(
        f"{cut}:2301:2388 [3] NCCL INFO comm 0x55d3c8a0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 3e000 commId "
        "0x9a5e1c7b2d4f6a81 - Init COMPLETE\n"
        f"{cut}:2301:2388 [3] enqueue.cc:1556 NCCL WARN Cuda failure 'an illegal memory access was encountered'\n")
    (tmp_path / "pods.txt").write_text("NAME   READY   STATUS   RESTARTS   AGE\n"
                                       f"{full}   0/1     Error     0          12m\n")
    _, rank, host = _root(tmp_path)
    assert (rank, host) == (3, full)


def test_a_nodes_nvswitch_sxid_names_the_fault_its_ranks_saw_as_nvlink_errors(tmp_path: Path) -> None:
    """Once the ranks' lines and the kernel's are known to be one host's, the node's fatal SXid (the NVSwitch that
    failed: NVIDIA's SXid catalog) is what every rank's cudaErrorNvlinkUncorrectable reports, and names the fault."""
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "node07.cluster.local.log").write_text(
        "2026-01-17T19:44:04+0000 node07 kernel: nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 24007, Fatal, Link 50 "
        "sourcetrack timeout error\n")
    lines = []
    for rank in (4, 5, 6, 7):
        lines += [f"node07: [rank{rank}]: Traceback (most recent call last):",
                  f'node07: [rank{rank}]:   File "/work/train.py", line 88, in <module>',
                  f"node07: [rank{rank}]: RuntimeError: CUDA error: uncorrectable NVLink error detected during the "
                  "execution"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    signature, _, host = _root(tmp_path)
    assert (signature, host) == ("sxid.fatal", "node07")


def test_a_jobset_pods_hostname_is_the_pod_named_with_its_generated_suffix(tmp_path: Path) -> None:
    """An Indexed Job's pod (a JobSet's) has hostname <job>-<index> and name <job>-<index>-<5 random characters>
    (kubernetes pkg/controller/job/job_controller.go; JobSet's job <jobset>-<replicated job>-<job index>,
    kubernetes-sigs/jobset pkg/util/placement/placement.go): NCCL prints the one, kubectl the other."""
    (tmp_path / "workers.log").write_text(
        "llama-workers-0-1:2301:2388 [3] NCCL INFO comm 0x55d3c8a0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 3e000 "
        "commId 0x9a5e1c7b2d4f6a81 - Init COMPLETE\n"
        "llama-workers-0-1:2301:2388 [3] enqueue.cc:1556 NCCL WARN Cuda failure 'an illegal memory access was "
        "encountered'\n")
    (tmp_path / "pods.txt").write_text("NAME                        READY   STATUS    RESTARTS   AGE\n"
                                       "llama-workers-0-0-b7x2k     1/1     Running   0          12m\n"
                                       "llama-workers-0-1-x7k2p     0/1     Error     0          12m\n")
    _, rank, host = _root(tmp_path)
    assert (rank, host) == (3, "llama-workers-0-1-x7k2p")
