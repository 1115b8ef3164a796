"""A small, realistic incident history: generated multi-rank logs run through the real Pipeline.

Scenarios: the bundled simulator's silent OOM kill, and a GPU that falls off the bus (Xid 79) or reports an
uncorrectable ECC error (Xid 48) on a chosen host and PCI bus — the hardware faults the offenders view ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipeline.service import Pipeline
from scan.engine import default_matcher
from schemas.clock import ManualClock
from schemas.incident import Incident
from simulate import oom_killed_rank
from store.incidents import Store
from tests.pipeline.helpers import RecordingScheduler, failed_job, shards_of

GPUS_PER_NODE = 8


def _host(rank: int) -> str:
    return f"node{rank // GPUS_PER_NODE:03d}"


def _rank_log(rank: int, world_size: int, t_fail: datetime, skew: timedelta, victim: int) -> list[str]:
    """What a rank prints in the formats NCCL and PyTorch use: init, training steps, then (survivors) the
    watchdog timing out on the collective the dead GPU never joined."""
    pid, dev = 20000 + rank * 7, rank % GPUS_PER_NODE
    head = f"{_host(rank)}:{pid}:{pid + 57} [{dev}]"
    ip = f"10.0.0.{rank // GPUS_PER_NODE + 1}"
    lines = [f"{head} NCCL INFO Bootstrap : Using eth0:{ip}<0>",
             f"{head} NCCL INFO NET/Socket : Using [0]eth0:{ip}<0>",
             # busIds 1a000, 2a000, ...: no GPU sits on the buses the Xids below name (3b, 5e, 86), so each kernel
             # line maps to its host only (the correlator maps a PCI address to its rank through these lines)
             f"{head} NCCL INFO comm 0x55d0c{rank:04x}000 rank {rank} nranks {world_size} cudaDev {dev} "
             f"nvmlDev {dev} busId {0x1a000 + dev * 0x10000:x} commId 0x6b3f0c9e1d2a4f10 - Init COMPLETE"]
    for step in range(10):
        t = t_fail - timedelta(seconds=(10 - step) * 2) + skew
        lines.append(f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [INFO] [rank{rank}] step {900 + step} "
                     f"loss {2.5 - step / 100:.4f}")
    if rank != victim:
        t = t_fail + timedelta(seconds=600 + rank / 100) + skew
        glog = f"{t:%m%d %H:%M:%S}.{t.microsecond:06d}"
        lines.append(f"[rank{rank}]:[E{glog} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
                     "operation timeout: WorkNCCL(SeqNum=912, OpType=ALLREDUCE, NumelIn=25165824, "
                     "NumelOut=25165824, Timeout(ms)=600000) ran for 600412 milliseconds before timing out.")
    return lines


XID_TEXT = {79: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            48: "pid=31337, name={name}, An uncorrectable double bit error (DBE) has been detected on GPU in the "
                "framebuffer at partition 6, subpartition 0."}


def xid_job(out: Path, victim: int, xid: int = 79, bus: int = 0x3B, world_size: int = 32,
            name: str = "python", silent: bool = True) -> None:
    """One GPU reports Xid `xid` in its host's kernel log and goes silent; every other rank times out. Each
    host's clock is off by a different amount, as on a real cluster. Not `silent`: the victim's watchdog times
    out like everyone's (its CPU-side thread still runs), so no rank stands out and only the host is known."""
    t_fail = datetime(2026, 11, 29, 10, 14, 0, tzinfo=UTC)
    skews = {h: timedelta(seconds=37 * h - 60) for h in range(world_size // GPUS_PER_NODE)}
    for r in range(world_size):
        path = out / _host(r) / f"rank{r}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = _rank_log(r, world_size, t_fail, skews[r // GPUS_PER_NODE], victim if silent else -1)
        path.write_text("\n".join(lines) + "\n")
    stamp = f"[{t_fail + skews[victim // GPUS_PER_NODE]:%a %b %d %H:%M:%S %Y}]"
    (out / _host(victim) / "dmesg.log").write_text(f"{stamp} NVRM: Xid (PCI:0000:{bus:02x}:00): {xid}, "
                                                   f"{XID_TEXT[xid].format(name=name)}\n")


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
    process: str = "python"  # the process name the kernel prints (whoever started it chose it)
    late: tuple[str, ...] = ()  # files that arrive after the first diagnosis: the incident is revised


def run_job(store: Store, clock: ManualClock, job: Job, tmp: Path) -> Incident:
    logs = tmp / job.job_id
    if job.kind == "oom":
        oom_killed_rank(logs, victim=job.victim)
        world = 64
    else:
        xid_job(logs, job.victim, xid=int(job.kind[3:]), bus=job.bus, name=job.process)
        world = 32
    pipe = Pipeline(store, default_matcher(), RecordingScheduler(), clock)
    pipe.accept_job(failed_job(job.job_id, world_size=world, cluster=job.cluster, team=job.team,
                               scheduler=job.scheduler))
    shards = shards_of(job.job_id, logs)
    late = [s for s in shards if s.source and s.source.endswith(job.late)] if job.late else []
    for shard in shards:
        if shard not in late:
            pipe.accept_shard(shard)
    incident = pipe.correlate(job.job_id)
    if late:
        clock.advance(60)
        for shard in late:
            pipe.accept_shard(shard)
        incident = pipe.correlate(job.job_id)
    assert incident is not None, f"{job.job_id}: no incident"
    return incident


# node001 is a repeat offender (Xid 79 on one GPU, in two jobs: the first diagnosed before its kernel log came,
# then revised); node002 had one ECC error, printed by a process whose name is HTML;
# node003 of k8s-a (Kubernetes) had two different Xids on one GPU.
HISTORY = [
    Job("train-oom-1", "oom", day=0),
    Job("train-xid-1", "xid79", victim=9, bus=0x3B, day=1, late=("dmesg.log",)),
    Job("train-xid-2", "xid79", victim=10, bus=0x3B, day=3, team="vision"),
    Job("train-ecc-1", "xid48", victim=17, bus=0x5E, day=8, cluster="c2", process="<script>alert(1)</script>"),
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
