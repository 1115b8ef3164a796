"""Under Ray a node is reported by the address Ray names it by. Ray prefixes every worker line it forwards to the
driver with "({actor} pid=N, ip=A) " (python/ray/_private/worker.py, print_worker_logs), lists nodes by that
address (`ray status`, `ray list nodes`) and names dead nodes by it; NCCL's header inside the same line carries
gethostname() (src/debug.cc). One node, two names: the answer uses the scheduler's, as it does Slurm's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from correlator.diagnose import diagnose
from firstfault.cli import main
from scan.engine import default_matcher, scan_source


def _worker(ip: str, host: str, rank: int, pid: int) -> str:
    head = f"(RayTrainWorker pid={pid}, ip={ip})"
    return (f"{head} Setting up process group for: env:// [rank={rank}, world_size=4]\n"
            f"{head} {host}:{pid}:{pid + 9} [0] NCCL INFO Bootstrap : Using ens5:{ip}<0>\n"
            f"{head} {host}:{pid}:{pid + 9} [0] NCCL INFO comm 0x55d0c0000000 rank {rank} nranks 4 cudaDev 0 "
            "busId 1b000 - Init COMPLETE\n")


def test_a_nodes_port_error_names_the_node_by_rays_address() -> None:
    lines = [_worker(f"10.25.33.{11 + r}", f"gpu{230 + r}", r, 68000 + r) for r in range(4)]
    lines.append("(RayTrainWorker pid=68002, ip=10.25.33.13) gpu232:68002:68011 [0] transport/net_ib/common.cc:185 "
                 "NCCL WARN NET/IB : mlx5_1:1 Got non-fatal async event: port error(10)\n")
    lines += [f"(RayTrainWorker pid={68000 + r}, ip=10.25.33.{11 + r}) gpu{230 + r}:{68000 + r}:{68010 + r} [0] "
              "transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.25.33.13<43014> with "
              "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  hca mlx5_1\n" for r in (0, 1, 3)]
    m = default_matcher()
    d = diagnose([scan_source(m, "driver.log", ["".join(lines).encode()], 2026, 0)], m.catalog)
    rc = d.root_cause
    assert rc is not None and rc.signature == "nccl.ib.async_port_error"
    assert rc.host == "10.25.33.13"


def test_without_ray_the_host_name_stays() -> None:
    text = ("node7:5100:5109 [0] NCCL INFO Bootstrap : Using ens5:10.0.0.7<0>\n"
            "node7:5100:5111 [0] transport/net_ib/common.cc:185 NCCL WARN NET/IB : mlx5_1:1 Got non-fatal async "
            "event: port error(10)\n")
    m = default_matcher()
    d = diagnose([scan_source(m, "node7.log", [text.encode()], 2026, 0)], m.catalog)
    assert d.root_cause is not None and d.root_cause.host == "node7"


def test_a_port_error_without_nccl_info_lines_still_names_the_node_by_rays_address() -> None:
    """NCCL_DEBUG unset: no "Bootstrap : Using" line ties gethostname to the address, but the WARN line's own Ray
    prefix does: one process prints both, so "ip=A" and its NCCL header's host are one machine."""
    lines = [f"(RayTrainWorker pid={68000 + r}, ip=10.25.33.{11 + r}) Setting up process group for: env:// "
             f"[rank={r}, world_size=4]\n" for r in range(4)]
    lines.append("(RayTrainWorker pid=68002, ip=10.25.33.13) gpu232:68002:68011 [2] transport/net_ib/common.cc:185 "
                 "NCCL WARN NET/IB : mlx5_1:1 Got non-fatal async event: port error(10)\n")
    lines += [f"(RayTrainWorker pid={68000 + r}, ip=10.25.33.{11 + r}) gpu{230 + r}:{68000 + r}:{68010 + r} [{r}] "
              "transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.25.33.13<43014> with "
              "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  hca mlx5_1\n" for r in (0, 1, 3)]
    m = default_matcher()
    d = diagnose([scan_source(m, "driver.log", ["".join(lines).encode()], 2026, 0)], m.catalog)
    rc = d.root_cause
    assert rc is not None and rc.signature == "nccl.ib.async_port_error"
    assert rc.host == "10.25.33.13"


def _trainer_table(nodes: list[tuple[str, str]]) -> list[str]:
    """Ray Train's worker table (ray/train/_internal/backend_executor.py: "Started distributed worker processes: "
    then "- (node_id={node_id}, ip={node_ip}, pid={pid}) world_rank={i}, local_rank={..}, node_rank={..}")."""
    out = ["(TorchTrainer pid=4836) Started distributed worker processes: \n"]
    for n, (ip, _host) in enumerate(nodes):
        out += [f"(TorchTrainer pid=4836) - (node_id={n:056x}, ip={ip}, pid={60000 + 2 * n + lr}) world_rank="
                f"{2 * n + lr}, local_rank={lr}, node_rank={n}\n" for lr in range(2)]
    return out


def test_a_dead_node_whose_workers_printed_only_info_lines_is_named_by_rays_address(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The GCS names the dead node by its address ("The node with node id: .. and address: A and node name: A has
    been marked dead": the driver's worker.py warning); its workers' only lines were NCCL INFO, kept as records
    without their Ray prefix (the CLI's scan drops the text of records nothing reads), so only the worker table and
    the dead-node line carry Ray's name of it."""
    nodes = [(f"10.245.226.{11 + n}", f"a3-highgpu-{205 + n}") for n in range(3)]
    lines = _trainer_table(nodes)
    for n, (ip, host) in enumerate(nodes):
        for lr in range(2):
            pid = 60000 + 2 * n + lr
            lines.append(f"(RayTrainWorker pid={pid}, ip={ip}) {host}:{pid}:{pid + 200} [{lr}] NCCL INFO Bootstrap: "
                         f"Using ib0:{ip}<0>\n")
    lines.append("(RayTrainWorker pid=60000, ip=10.245.226.11) a3-highgpu-205:60000:60201 [0] transport/net_ib/"
                 "p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.245.226.13<43296> with status="
                 "IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  hca mlx5_7\n")
    lines.append("2026-07-10 11:56:33,124\tWARNING worker.py:2072 -- The node with node id: "
                 f"{2:056x} and address: 10.245.226.13 and node name: 10.245.226.13 has been marked dead because "
                 "the detector has missed too many heartbeats from it. This can happen when a \t(1) raylet crashes "
                 "unexpectedly (OOM, preempted node, etc.) \n")
    log = tmp_path / "driver.log"
    log.write_text("".join(lines))
    assert main(["diagnose", str(log), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert rc["signature"] == "ray.node_dead"
    assert rc["host"] == "10.245.226.13"
