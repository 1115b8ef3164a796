"""Duplicate or missing ranks at launch: a failure that no single line shows, only the processes' rank
announcements taken together (correlator/derived.py, catalog entry launch.duplicate_rank).

Every PyTorch Lightning process logs the global rank it claims before init_process_group:
Lightning-AI/pytorch-lightning src/lightning/fabric/utilities/distributed.py, _init_dist_connection:
    log.info(f"Initializing distributed: GLOBAL_RANK: {global_rank}, MEMBER: {global_rank + 1}/{world_size}")
(pytorch_lightning 1.x, plugins/training_type/ddp.py init_ddp_connection: "initializing ddp: GLOBAL_RANK: ...").
With `srun python train.py` and one Slurm task per node while Lightning spawns a process per GPU, every node
computes node rank 0: each GLOBAL_RANK of the first node appears once per node and the others never appear.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main


def _diagnose(capsys: pytest.CaptureFixture[str], *paths: Path) -> dict[str, object]:
    assert main(["diagnose", *map(str, paths), "--format", "json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def _node(gpus: int, world: int, first: int = 0, banner: str = "Initializing distributed") -> str:
    lines = ["GPU available: True (cuda), used: True", "TPU available: False, using: 0 TPU cores"]
    for local in range(gpus):
        rank = first + local
        lines += [f"LOCAL_RANK: {local} - CUDA_VISIBLE_DEVICES: [0,1,2,3]",
                  f"{banner}: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/{world}"]
    return "\n".join(lines) + "\n"


def test_two_nodes_claiming_the_same_ranks_is_a_job_wide_launch_fault(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Two nodes' logs, each announcing ranks 0-3 of 8, no error line at all (the job hung in the rendezvous)."""
    for node in ("node001", "node002"):
        (tmp_path / f"{node}.log").write_text(_node(4, 8))
    d = _diagnose(capsys, tmp_path)
    rc = d["root_cause"]
    assert isinstance(rc, dict)
    assert d["verdict"] == "diagnosed"
    assert rc["signature"] == "launch.duplicate_rank"
    assert rc["category"] == "configuration"
    assert rc["rank"] is None and rc["host"] is None  # the launch is at fault, not a rank
    why = " ".join(rc["explanation"])
    assert "0-3" in why and "4-7" in why  # which ranks were claimed twice, which never started
    assert any("GLOBAL_RANK: 0," in ev["text"] for ev in rc["evidence"])
    assert "--ntasks-per-node" in str(d["fix"])
    assert "WORLD_SIZE" in str(d["verification"])


def test_interleaved_copies_in_one_log_with_the_old_banner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One interleaved log of both nodes, Lightning 1.x's wording: the same announcement twice, no prefix."""
    a, b = _node(2, 4, banner="initializing ddp").splitlines(), _node(2, 4, banner="initializing ddp").splitlines()
    (tmp_path / "slurm-4711.out").write_text("\n".join(x for pair in zip(a, b, strict=True) for x in pair) + "\n")
    rc = _diagnose(capsys, tmp_path / "slurm-4711.out")["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "launch.duplicate_rank"
    assert rc["rank"] is None and rc["host"] is None


def test_a_restarted_worker_group_announcing_every_rank_again_is_not_a_duplicate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every rank of 4 announced twice (two rounds of the worker group), then a CUDA OOM on rank 2: the OOM."""
    oom = ("[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
           "capacity of 79.15 GiB of which 1.02 GiB is free.\n")
    text = _node(4, 4) + _node(4, 4) + oom
    (tmp_path / "train.log").write_text(text)
    rc = _diagnose(capsys, tmp_path / "train.log")["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] != "launch.duplicate_rank"
    assert rc["rank"] == 2


def test_each_rank_once_is_no_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "node001.log").write_text(_node(4, 8))
    (tmp_path / "node002.log").write_text(_node(4, 8, first=4))
    d = _diagnose(capsys, tmp_path)
    assert d["verdict"] == "no_failure_found"


def test_nemo_rank_zero_copy_of_its_own_claim_is_no_duplicate(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """NeMo's exp_manager (NVIDIA/NeMo nemo/utils/exp_manager.py) copies global rank zero's Lightning lines into
    <exp_dir>/<name>/<version>/lightning_logs.txt: rank 0's claim twice, from one process, under an sbatch
    output named log-%x_%j.out. Neither file's name is a host, so no two hosts claim rank 0."""
    (tmp_path / "log-nemotron_15b_8714528.out").write_text(
        _node(4, 4) + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    run = tmp_path / "results" / "nemotron_15b" / "2026-12-08_16-27-27"
    run.mkdir(parents=True)
    (run / "lightning_logs.txt").write_text("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n")
    d = _diagnose(capsys, tmp_path)
    assert d["root_cause"]["signature"] != "launch.duplicate_rank"  # type: ignore[index]


_NCCL_START = ("{host}:{pid}:{tid} [{dev}] NCCL INFO comm 0x55d0b8c0{dev:02x}f0 rank {rank} nranks {world} cudaDev "
               "{dev} nvmlDev {dev} busId {bus}000 commId 0x{comm} - Init START")
_BUSES = ("18", "2a", "3a", "5d")


def _nccl_node(host: str, first: int, world: int, comm: str = "9a2e6d9c5b1f0e1d") -> str:
    """NVIDIA/nccl src/init.cc's INFO line (NCCL_DEBUG=INFO): "comm %p rank %d nranks %d cudaDev %d nvmlDev %d
    busId %lx commId 0x%llx - Init START", under NCCL's "host:pid:tid [dev]" header."""
    return "\n".join(_NCCL_START.format(host=host, pid=51200 + dev, tid=51320 + dev, dev=dev, rank=first + dev,
                                        world=world, bus=_BUSES[dev], comm=comm) for dev in range(4)) + "\n"


def test_two_processes_starting_one_nccl_communicator_as_the_same_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both nodes start communicator 0x9a2e… as ranks 0-3 of 8: no NCCL WARN (the root's log is not here)."""
    for host in ("node001", "node002"):
        (tmp_path / f"{host}.log").write_text(_nccl_node(host, 0, 8))
    rc = _diagnose(capsys, tmp_path)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "launch.duplicate_rank"
    assert rc["rank"] is None and rc["host"] is None
    why = " ".join(rc["explanation"])
    assert "node001:51200" in why and "node002:51200" in why and "as rank 0 of 8" in why


def test_distinct_ranks_of_one_nccl_communicator_are_no_duplicate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "node001.log").write_text(_nccl_node("node001", 0, 8))
    (tmp_path / "node002.log").write_text(_nccl_node("node002", 4, 8))
    assert _diagnose(capsys, tmp_path)["verdict"] == "no_failure_found"


def test_a_second_attempt_starts_another_communicator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A restarted worker group makes a new unique id: the same ranks again, under another commId."""
    (tmp_path / "node001.log").write_text(_nccl_node("node001", 0, 4) + _nccl_node("node001", 0, 4, "77aa01bc03de45f6"))
    assert _diagnose(capsys, tmp_path)["verdict"] == "no_failure_found"


def test_one_nodes_log_of_a_failed_job_does_not_blame_the_launch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only node001's log (ranks 0-3 of 8), which ends in a watchdog timeout: ranks 4-7 are in logs not given."""
    watchdog = ("[rank2]:[E302 09:25:30.123456789 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=4120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")
    (tmp_path / "node001.log").write_text(_node(4, 8) + watchdog)
    rc = _diagnose(capsys, tmp_path / "node001.log")["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] != "launch.duplicate_rank"


def test_deepspeed_discovery_lines_claiming_one_rank_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """deepspeedai/DeepSpeed deepspeed/comm/comm.py, patch_aml_env_for_torch_nccl_backend: "Discovered AzureML
    settings of world_rank={}, local_rank={}, world_size={}, master_addr={}, master_port={}", on every process.
    Two nodes that read the same rank variables claim ranks 0-1 of 4 twice; 2-3 never appear."""
    line = ("[2026-03-02 09:00:01,412] [INFO] [comm.py:{n}:patch_aml_env_for_torch_nccl_backend] Discovered AzureML "
            "settings of world_rank={r}, local_rank={r}, world_size=4, master_addr=10.0.0.4, master_port=6105")
    for host in ("node001", "node002"):
        (tmp_path / f"{host}.log").write_text("\n".join(line.format(n=949, r=r) for r in range(2)) + "\n")
    rc = _diagnose(capsys, tmp_path)["root_cause"]
    assert isinstance(rc, dict)
    assert rc["signature"] == "launch.duplicate_rank"
    assert "2-3" in " ".join(rc["explanation"])
