"""torchx's log prefix: a Kubernetes node's Xid finds its rank through the NCCL init lines behind torchx's
role/replica prefix (correlator/speakers.py). Fixtures written from the formats upstream prints:

- torchx/cli/cmd_log.py, print_log_lines: each line of replica k of role r is printed f"{r}/{k} " + the line;
- torchx/components/dist.py, ddp: each replica runs torchrun --nnodes N --nproc_per_node P --tee 3, whose workers'
  lines carry "[default{local_rank}]:" (torch.distributed.elastic's tee prefix); under the default c10d rendezvous
  the node ranks are the join order, so the replica id is not read as a node rank;
- NVIDIA/nccl src/debug.cc ("%s:%d:%d [%d] " host, pid, tid, cudaDev) and src/init.cc ("comm %p rank %d nranks %d
  cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE");
- kubernetes pkg/scheduler/schedule_one.go: "Successfully assigned <ns>/<pod> to <node>" (kubectl get events);
- open-gpu-kernel-modules kernel_rc.c: "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=..., name=..., ..." in the node's log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

POD = "llm-run-7q2x-trainer-{replica}-0"
NODE = "gke-a3-pool-5d1e-{replica}"
BUSES = ("18000", "2a000", "3a000", "db000")


def _job(root: Path, replica_order: tuple[int, ...], victim: tuple[int, int], nproc: int = 4) -> Path:
    """Replicas join in ``replica_order``: the i-th to join is node rank i (c10d)."""
    lines = []
    for node_rank, replica in enumerate(replica_order):
        pod = POD.format(replica=replica)
        for local in range(nproc):
            rank, pid = node_rank * nproc + local, 5100 + 10 * replica + local
            lines.append(f"trainer/{replica} [default{local}]:{pod}:{pid}:{pid + 41} [{local}] NCCL INFO comm "
                         f"0x5d2a6c0e8f10 rank {rank} nranks {nproc * len(replica_order)} cudaDev {local} nvmlDev "
                         f"{local} busId {BUSES[local]} commId 0x1f3e5a7c9b2d4f60 - Init COMPLETE")
    replica, local = victim
    lines.append(f"trainer/{replica} [default{local}]:RuntimeError: CUDA error: unspecified launch failure")
    root.mkdir(parents=True)
    (root / "torchx.log").write_text("\n".join(lines) + "\n")
    (root / "events.txt").write_text("LAST SEEN   TYPE      REASON      OBJECT                     MESSAGE\n" + "".join(
        f"46m{r}s      Normal    Scheduled   pod/{POD.format(replica=r)}   Successfully assigned "
        f"default/{POD.format(replica=r)} to {NODE.format(replica=r)}\n" for r in replica_order))
    (root / "nodes").mkdir()
    bus = BUSES[local][:2]
    (root / "nodes" / f"{NODE.format(replica=replica)}.log").write_text(
        f"[ 8312.554012] NVRM: Xid (PCI:0000:{bus}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
        "the bus.\n")
    return root


@pytest.mark.parametrize(("order", "victim", "rank"), [((0, 1, 2), (1, 3), 7), ((2, 0, 1), (1, 2), 10)])
def test_the_xid_is_the_rank_whose_init_line_named_its_bus(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           order: tuple[int, ...], victim: tuple[int, int],
                                                           rank: int) -> None:
    """Replica 1's GPU 3 is rank 7 where replicas joined in order, and its GPU 2 is rank 10 where it joined
    last: the rank is read from the lines behind the prefix, never computed from the replica id."""
    assert main(["diagnose", str(_job(tmp_path / "job", order, victim)), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["signature"], rc["rank"], rc["host"]) == ("xid.79", rank, POD.format(replica=victim[0]))
