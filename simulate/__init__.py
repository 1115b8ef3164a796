"""Realistic multi-rank failure logs with known answers, for demos, tests and the accuracy benchmark.

Each scenario writes per-rank logs, per-node kernel and torchrun logs, scheduler output and Flight Recorder dumps
in the exact formats NCCL, PyTorch, torchrun, the kernel and Slurm print, with per-host clock skew, and returns the
ground truth: the initiating rank and host (none for a job-wide fault) and the ranks that only reacted.
Deterministic for a given seed.

    truth = generate("nic_failure", Path("/tmp/job"), seed=3, knobs=Knobs(world_size=256, max_skew_s=300))
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from simulate import platform, ranks
from simulate.cascade import Failure, Knobs
from simulate.cluster import GPUS_PER_NODE, START, Cluster, Job
from simulate.legacy import _dmesg_oom, _glog, _nccl_init, _reset_by_peer, _std, _watchdog, oom_killed_rank
from simulate.write import Truth, write

__all__ = ["GPUS_PER_NODE", "NODE_SCENARIOS", "SCENARIOS", "START", "Cluster", "Knobs", "Truth", "_dmesg_oom",
           "_glog", "_nccl_init", "_reset_by_peer", "_std", "_watchdog", "generate", "oom_killed_rank"]

Scenario = Callable[[Job, Knobs], Failure]
SCENARIOS: dict[str, Scenario] = {
    "cuda_oom": ranks.cuda_oom,
    "oom_killer": ranks.oom_killer,
    "xid79": ranks.xid79,
    "ecc": ranks.ecc,
    "sigsegv": ranks.sigsegv,
    "straggler": ranks.straggler,
    "bootstrap_exception": ranks.bootstrap_exception,
    "unknown_error": ranks.unknown_error,
    "two_independent": ranks.two_independent,
    "nic_failure": platform.nic_failure,
    "wrong_ifname": platform.wrong_ifname,
    "store_master_death": platform.store_master_death,
    "slurm_node_failure": platform.slurm_node_failure,
    "job_config": platform.job_config,
}
# These need at least two nodes to mean anything.
NODE_SCENARIOS = frozenset({"nic_failure", "wrong_ifname", "slurm_node_failure", "two_independent"})


def generate(scenario: str, out: Path, seed: int = 0, knobs: Knobs | None = None) -> Truth:
    knobs = knobs or Knobs()
    world = knobs.world_size
    if scenario in NODE_SCENARIOS:
        world = max(world, 2 * GPUS_PER_NODE)
    c = Cluster(world, seed, knobs.max_skew_s)
    job = Job(c)
    job.knobs = knobs
    failure = SCENARIOS[scenario](job, knobs)
    return write(job, scenario, failure, knobs, out, random.Random(seed ^ 0x5EED))
