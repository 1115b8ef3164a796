"""A node's block of global ranks (torchrun: global = the node's base + local rank, torch/distributed/elastic/
agent/server/api.py _assign_worker_ranks), filled only from local ranks said with their node."""

from __future__ import annotations

from correlator.identity import IdentityMap
from correlator.local_ranks import fill_hosts, local_ranks
from correlator.speakers import Who


def _speakers(nodes: dict[str, int], per_node: int) -> list[tuple[Who, str]]:
    """Each node's workers but its last, under torchrun's [defaultN]: prefix, with their global rank."""
    out = []
    for host, base in nodes.items():
        for local in range(per_node - 1):
            out.append((Who(rank=base + local, host=host, local_rank=local), f"{host}/stderr.log"))
    return out


def test_a_silent_worker_is_placed_on_its_node_from_the_nodes_other_workers() -> None:
    ids = IdentityMap()
    speakers = _speakers({"gpu-a01": 0, "gpu-a02": 4}, per_node=4)
    speakers.append((Who(host="gpu-a02", local_rank=3), "gpu-a02/stderr.log"))  # the agent names local rank 3
    local = local_ranks([], {}, speakers, ids)
    fill_hosts(ids, local)
    assert ids.host_of_rank[7] == "gpu-a02" and ids.host_of_rank[2] == "gpu-a01"


def test_srun_task_labels_do_not_size_a_node() -> None:
    """srun -l's "3: " is a task number, one task per node under torchrun: a local rank of no node. Nodes of two
    workers each stay two wide; no rank 2 or 3 is put on the first node."""
    ids = IdentityMap()
    speakers = _speakers({"a100-033": 0, "a100-034": 2}, per_node=3)  # locals 0 and 1 of two-worker nodes
    speakers += [(Who(local_rank=3), "slurm-1.out"), (Who(local_rank=2), "slurm-1.out")]
    local = local_ranks([], {}, speakers, ids)
    fill_hosts(ids, local)
    assert ids.host_of_rank == {0: "a100-033", 1: "a100-033", 2: "a100-034", 3: "a100-034"}
