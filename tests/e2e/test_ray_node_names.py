"""Under Ray a node is reported by the address Ray names it by. Ray prefixes every worker line it forwards to the
driver with "({actor} pid=N, ip=A) " (python/ray/_private/worker.py, print_worker_logs), lists nodes by that
address (`ray status`, `ray list nodes`) and names dead nodes by it; NCCL's header inside the same line carries
gethostname() (src/debug.cc). One node, two names: the answer uses the scheduler's, as it does Slurm's."""

from __future__ import annotations

from pathlib import Path

import pytest

from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_source, scan_sources
from sources.files import expand


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


def _table_row(ip: str, rank: int, pid: int) -> str:
    """Ray Train's worker table (ray/train/_internal/backend_executor.py, _create_rank_world_size_mappings)."""
    return (f"(TorchTrainer pid=3600) - (node_id={rank:056x}, ip={ip}, pid={pid}) world_rank={rank}, "
            f"local_rank=0, node_rank={rank}\n")


def test_a_node_lost_silently_is_named_by_rays_address_though_it_printed_no_error(tmp_path: Path) -> None:
    """The lost node's workers printed only INFO lines before it went (their text is not kept): the GCS's "marked
    dead" line (src/ray/gcs/gcs_server/gcs_node_manager.cc) and ActorDiedError's `ip:` (python/ray/exceptions.py)
    name it by its address, and the worker table does too; NCCL's header named it gpu231."""
    lines = [_table_row(f"10.25.33.{11 + r}", r, 68000 + r) for r in range(2)]
    lines += [_worker(f"10.25.33.{11 + r}", f"gpu{230 + r}", r, 68000 + r) for r in range(2)]
    lines += ["2026-04-06 01:04:27,891\tWARNING worker.py:2072 -- The node with node id: " + "ab" * 28 + " and "
              "address: 10.25.33.12 and node name: 10.25.33.12 has been marked dead because the detector has missed "
              "too many heartbeats from it.\n",
              "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n",
              "\tclass_name: RayTrainWorker\n", "\tpid: 68001\n", "\tip: 10.25.33.12\n"]
    (tmp_path / "driver.log").write_text("".join(lines))
    m = default_matcher()  # read from a file, as `firstfault diagnose` reads it: INFO lines kept without their text
    d = diagnose(scan_sources(m, expand([str(tmp_path)]), 2026).results, m.catalog)
    rc = d.root_cause
    assert rc is not None and rc.signature == "ray.node_dead"
    assert rc.host == "10.25.33.12"


@pytest.mark.parametrize("timestamped", [False, True])
def test_without_nccls_info_lines_the_prefix_and_the_header_of_one_line_name_one_node(tmp_path: Path,
                                                                                       timestamped: bool) -> None:
    """NCCL_DEBUG=WARN: no `Bootstrap : Using` line joins gethostname() to an address. A line Ray forwarded still
    does: its prefix is the worker's node's address (print_worker_logs) and the NCCL header after it
    (`host:pid:tid [dev]`, src/debug.cc) is gethostname() of the same process."""
    lines = [f"(RayTrainWorker pid={68000 + r}, ip=10.25.33.{11 + r}) Setting up process group for: env:// "
             f"[rank={r}, world_size=4]\n" for r in range(4)]
    lines.append("(RayTrainWorker pid=68002, ip=10.25.33.13) gpu232:68002:68011 [0] transport/net_ib/common.cc:185 "
                 "NCCL WARN NET/IB : mlx5_1:1 Got non-fatal async event: port error(10)\n")
    lines += [f"(RayTrainWorker pid={68000 + r}, ip=10.25.33.{11 + r}) gpu{230 + r}:{68000 + r}:{68010 + r} [0] "
              "transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.25.33.13<43014> with "
              "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  hca mlx5_1\n" for r in (0, 1, 3)]
    if timestamped:  # NCCL_DEBUG_TIMESTAMP_FORMAT (src/debug.cc): a bracketed time before the header
        lines = [line.replace(") gpu", ") [2026-01-26 09:44:16] gpu", 1) for line in lines]
    (tmp_path / "driver.log").write_text("".join(lines))
    m = default_matcher()
    d = diagnose(scan_sources(m, expand([str(tmp_path)]), 2026).results, m.catalog)
    rc = d.root_cause
    assert rc is not None and rc.signature == "nccl.ib.async_port_error"
    assert rc.host == "10.25.33.13"
