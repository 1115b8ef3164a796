"""A node's folder and the two spellings its processes print of its name are one host (correlator/naming.py
_folder_hosts).

On AWS a collector files each node's logs under the scheduler's name (gpu-st-p4d24xlarge-3/console.log), while
NCCL's header names the host by gethostname() cut at its first dot (NVIDIA/nccl src/debug.cc, getHostName(...,
'.'): `ip-10-0-0-3:pid:tid [dev] NCCL INFO ...`) and torchrun's failure table by socket.getfqdn() (pytorch/pytorch
torch/distributed/elastic/multiprocessing/errors/__init__.py: `host : ip-10-0-0-3.ec2.internal`). Since the table's
host row was read as the file's host (29969de), the folder's lines named two hosts and the folder was linked to
neither: the survivors' blame of 10.0.0.3 went to a host `ip-10-0-0-3` of its own, away from the OOM's rank, and
the simulator's hostile sweep (issue 22, two_independent seed 281784802) named the other node's later Xid at 0.96.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from scan.engine import default_matcher, diagnose_sources
from sources.files import expand
from tests.e2e import formats as F

NODES = ("gpu-st-p4d24xlarge-1", "gpu-st-p4d24xlarge-3")


def _header(node: int, local: int) -> str:
    return f"[default{local}]:ip-10-0-0-{2 * node + 1}:{41000 + local}:{41100 + local} [{local}] NCCL"


def _console(node: int) -> list[str]:
    """Node `node` of a 2 x 2 job (global ranks 2*node, 2*node+1), torchrun's `[defaultN]:` local prefixes."""
    ip = f"10.0.0.{2 * node + 1}"
    lines = []
    for local in (0, 1):
        rank = 2 * node + local
        lines += [f"{_header(node, local)} INFO Bootstrap : Using eth0:{ip}<0>",
                  f"{_header(node, local)} INFO ncclCommInitRank comm 0x55d0c00{rank}000 rank {rank} nranks 4 "
                  f"cudaDev {local} nvmlDev {local} busId {local + 1}b000 commId 0x6b3f0c9e1d2a4f10 - Init COMPLETE"]
    if node == 1:  # rank 3 (local 1) runs out of memory; its agent's table names the node by its FQDN
        lines += ["[default1]:Traceback (most recent call last):",
                  "[default1]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
                  "total capacity of 79.15 GiB of which 1.06 GiB is free."]
        lines += ["E1129 10:02:05.000000 4100 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                  "(exitcode: 1) local_rank: 1 (pid: 41001) of binary: /usr/bin/python3",
                  "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
                  *F.failure_table("train.py", "2026-11-29_10:02:05", "ip-10-0-0-3.ec2.internal", 3, 1, 1, 41001)]
    else:  # the other node's ranks lose their connection to it (NVIDIA/nccl src/misc/socket.cc)
        for local in (0, 1):
            t = F.T0 + timedelta(seconds=4 + local)
            lines += [f"{_header(node, local)} WARN socketProgress: Connection closed by remote peer "
                      f"10.0.0.3<{43000 + local}>",
                      f"[default{local}]:" + F.remote_error(F.Job(), local, t)[0]]
    return lines


def test_a_folder_whose_lines_spell_its_host_two_ways_is_that_one_host(tmp_path: Path) -> None:
    F.write(tmp_path, {f"{name}/console.log": _console(i) for i, name in enumerate(NODES)})
    d = diagnose_sources(default_matcher(), expand([str(tmp_path)]), 2026)
    rc = d.root_cause
    assert rc is not None and (rc.signature, rc.rank, rc.host) == ("cuda.oom", 3, "gpu-st-p4d24xlarge-3")
    named = {a.host for a in d.alternatives} | {s.host for s in d.suspects}
    assert not any(h and h.startswith("ip-10-0-0-3") for h in named)
