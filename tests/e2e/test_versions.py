"""Mixed NCCL releases: the host that runs the rarer one is named (correlator/versions.py).

torch raises NCCL's errors with the library's release (`NCCL error in: ...ProcessGroupNCCL.cpp:2006, invalid
usage ..., NCCL version 2.19.3`), and NCCL's check (src/init.cc initTransportsRank) prints "Mismatched NCCL version
detected : rank %d version %d rank %d version %d" on every rank: the first peer whose release differs, then the
printing rank itself (`WARN(..., i, peerInfo[i].version, rank, peerInfo[rank].version)`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main
from tests.e2e import formats as F

_ERROR = ("[rank{r}]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
          "ProcessGroupNCCL.cpp:2006, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version {v}")
_CHECK = "[rank{r}]:Mismatched NCCL version detected : rank {peer} version {peer_code} rank {r} version {code}"


def _job(tmp_path: Path, capsys: pytest.CaptureFixture[str], hosts: tuple[str, ...], odd: str) -> dict[str, object]:
    job = F.Job(hosts=hosts, per_host=2)
    files: dict[str, list[str]] = {}
    for r in range(job.world):
        host = job.host(r)
        v, code = ("2.19.3", 21903) if host == odd else ("2.21.5", 22105)
        peer = (r + job.per_host) % job.world
        peer_code = 21903 if job.host(peer) == odd else 22105
        lines = [*F.nccl_init(job, r)]
        if peer_code != code:
            lines.append(_CHECK.format(r=r, code=code, peer=peer, peer_code=peer_code))
        lines.append(_ERROR.format(r=r, v=v))
        files.setdefault(f"{host}/console.log", []).extend(lines)
    assert main(["diagnose", str(F.write(tmp_path, files)), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_the_host_running_the_rarer_release_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _job(tmp_path, capsys, ("gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04"), odd="gpu-a03")
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert (rc["signature"], rc["host"], rc["rank"]) == ("nccl.config.version_mismatch", "gpu-a03", None)


def test_two_hosts_two_releases_name_neither(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Half and half: nothing says which image is the intended one."""
    d = _job(tmp_path, capsys, ("gpu-a01", "gpu-a02"), odd="gpu-a02")
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "nccl.config.version_mismatch" and rc["host"] is None


def test_srun_labels_and_the_check_lines_alone_place_the_ranks(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """One `srun -l` file (task id = global rank) with NCCL_DEBUG=WARN: no init line maps a rank to its host;
    only the check's own WARN lines carry both the task label and NCCL's `host:pid:tid` header. Every rank checks
    against the first peer of another release: the odd host's ranks name rank 0, the others name its first rank."""
    job = F.Job(hosts=("h100-132", "h100-133", "h100-134", "h100-135"), per_host=4)
    odd = "h100-133"
    first_odd = job.hosts.index(odd) * job.per_host
    lines: list[str] = []
    for r in range(job.world):
        mine = 22602 if job.host(r) == odd else 22304
        peer = 0 if job.host(r) == odd else first_odd
        peer_code = 22304 if mine == 22602 else 22602
        warn = F.nccl(job, r, "WARN", "init.cc:775 Mismatched NCCL version detected : "
                                      f"rank {peer} version {peer_code} rank {r} version {mine}")
        release = "2.26.2" if mine == 22602 else "2.23.4"
        lines += [f"{r:02d}: {warn}",
                  f"{r:02d}: " + _ERROR.split("]: ", 1)[1].format(v=release)]
    lines += [F.srun_exit(h, f"{job.per_host * i}-{job.per_host * (i + 1) - 1}", 1) for i, h in enumerate(job.hosts)]
    assert main(["diagnose", str(F.write(tmp_path, {"slurm-1671383.out": lines})), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["signature"], rc["host"], rc["rank"]) == ("nccl.config.version_mismatch", odd, None)


def _srun_direct(tmp_path: Path, capsys: pytest.CaptureFixture[str], job: F.Job, odd: str,
                 last_error: bool) -> dict[str, object]:
    """`srun -l python train.py` (task id = global rank) without NCCL_DEBUG, the ranks of ``odd`` on NCCL 2.23.4 and
    the others on 2.18.6: each rank prints torch's wrapper, then (``last_error``: under ncclGetLastError's `Last
    error:`) NCCL's check naming the first peer of the other release and itself; srun's exit lines (src/srun/
    launch.c _task_finish) end the file, one a node. The diagnosis' root cause."""
    lines: list[str] = []
    for r in range(job.world):
        mine, release = (22304, "2.23.4") if job.host(r) == odd else (21806, "2.18.6")
        peer = 0 if job.host(r) == odd else job.hosts.index(odd) * job.per_host
        peer_code = 21806 if mine == 22304 else 22304
        lines.append(f"{r:03d}: " + _ERROR.split("]: ", 1)[1].format(v=release))
        if last_error:
            lines += [f"{r:03d}: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
                      f"{r:03d}: Last error:"]
        lines.append(f"{r:03d}: Mismatched NCCL version detected : "
                     f"rank {peer} version {peer_code} rank {r} version {mine}")
    lines += [F.srun_exit(h, f"{job.per_host * i}-{job.per_host * (i + 1) - 1}", 1) for i, h in enumerate(job.hosts)]
    assert main(["diagnose", str(F.write(tmp_path, {"slurm-7805830.out": lines})), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["root_cause"]  # type: ignore[no-any-return]


def test_torchs_wrapper_before_ncclss_last_error_still_names_the_version_check(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each rank prints torch's wrapper (`DistBackendError: NCCL error in: ..., invalid usage ..., NCCL version X`,
    ProcessGroupNCCL.cpp) before NCCL's own message. The wrapper only carries what it wraps: the class is the
    version check's, and srun's exit lines place the ranks on their hosts, so the host of the rarer release is
    named."""
    job = F.Job(hosts=("h100-207", "h100-211", "h100-213", "h100-214"), per_host=4)
    rc = _srun_direct(tmp_path, capsys, job, "h100-211", last_error=True)
    assert (rc["signature"], rc["host"], rc["rank"]) == ("nccl.config.version_mismatch", "h100-211", None)


def test_a_large_jobs_srun_exit_lines_all_place_their_nodes(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """srun prints one exit line per node at the end, in one run (one event): the odd node's line is the 19th.
    Each line is about another node, so none is a repeat of another (correlator/floods.py in_event_key), and the
    node running the other release is still placed."""
    job = F.Job(hosts=tuple(f"h100-{200 + i}" for i in range(20)), per_host=2)
    rc = _srun_direct(tmp_path, capsys, job, "h100-218", last_error=False)
    assert (rc["signature"], rc["host"], rc["rank"]) == ("nccl.config.version_mismatch", "h100-218", None)
