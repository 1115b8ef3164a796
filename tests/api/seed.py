"""A small, realistic incident history: generated multi-rank logs run through the real Pipeline.

Scenarios: the bundled simulator's silent OOM kill, and a GPU that falls off the bus (Xid 79) or reports an
uncorrectable ECC error (Xid 48) on a chosen host and PCI bus — the hardware faults the offenders view ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from firstfault.engine import default_matcher
from firstfault.simulate import Cluster, _nccl_init, _training, _watchdog, oom_killed_rank
from pipeline.service import Pipeline
from schemas.incident import Incident
from store.incidents import Store
from tests.pipeline.helpers import ManualClock, RecordingScheduler, failed_job, shards_of

def xid_job(out: Path, victim: int, xid: int = 79, bus: int = 0x3B, world_size: int = 32, seed: int = 0) -> None:
    """One GPU reports Xid `xid` in the kernel log of its host; every other rank's collective times out."""
    c = Cluster(world_size, seed, max_skew_s=120)
    t_fail = datetime(2026, 11, 29, 10, 14, 0, tzinfo=UTC) + timedelta(seconds=c.rng.uniform(0, 20))
    for r in range(world_size):
        lines = _nccl_init(c, r) + _training(c, r, 12, t_fail)
        if r != victim:
            lines += _watchdog(c, r, t_fail + timedelta(seconds=600 + c.rng.uniform(0, 2)), 912)
        path = out / c.host(r) / f"rank{r}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    stamp = f"[{c.clock(victim, t_fail):%a %b %d %H:%M:%S %Y}]"
    pci = f"0000:{bus:02x}:00"
    text = {79: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            48: "pid=31337, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the "
                "framebuffer at partition 6, subpartition 0."}[xid]
    (out / c.host(victim) / "dmesg.log").write_text(f"{stamp} NVRM: Xid (PCI:{pci}): {xid}, {text}\n")


@dataclass(frozen=True)
class Job:
    job_id: str
    kind: str  # "oom" | "xid79" | "xid48"
    cluster: str = "c1"
    team: str = "llm"
    scheduler: str = "slurm"
    victim: int = 37
    bus: int = 0x3B
    day: int = 0  # days after the clock's start


def run_job(store: Store, clock: ManualClock, job: Job, tmp: Path) -> Incident:
    logs = tmp / job.job_id
    if job.kind == "oom":
        oom_killed_rank(logs, victim=job.victim)
        world = 64
    else:
        xid_job(logs, job.victim, xid=int(job.kind[3:]), bus=job.bus)
        world = 32
    pipe = Pipeline(store, default_matcher(), RecordingScheduler(), clock)
    pipe.accept_job(failed_job(job.job_id, world_size=world, cluster=job.cluster, team=job.team,
                               scheduler=job.scheduler))
    for shard in shards_of(job.job_id, logs):
        pipe.accept_shard(shard)
    incident = pipe.correlate(job.job_id)
    assert incident is not None, f"{job.job_id}: no incident"
    return incident


# node001 is a repeat offender (two Xids on one GPU, in two jobs); node002 had one ECC error; node003 of k8s-a is on Kubernetes.
HISTORY = [
    Job("train-oom-1", "oom", day=0),
    Job("train-xid-1", "xid79", victim=9, bus=0x3B, day=1),
    Job("train-xid-2", "xid79", victim=10, bus=0x3B, day=3, team="vision"),
    Job("train-ecc-1", "xid48", victim=17, bus=0x5E, day=8, cluster="c2"),
    Job("k8s-xid-1", "xid79", victim=25, bus=0x86, day=9, cluster="k8s-a", scheduler="k8s"),
    Job("k8s-xid-2", "xid48", victim=28, bus=0x86, day=10, cluster="k8s-a", scheduler="k8s"),
]


def seed_history(store: Store, tmp: Path, jobs: list[Job] = HISTORY) -> dict[str, Incident]:
    out = {}
    for job in jobs:
        clock = ManualClock()
        clock.advance(job.day * 86400)
        out[job.job_id] = run_job(store, clock, job, tmp)
    return out
