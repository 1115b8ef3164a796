"""One failed job as true-time events: who printed what, when (in true time), on which channel.

The layout's renderer turns events into files: it adds each program's prefix and the host's skewed clock, and
puts each channel where that launcher puts it. Kinds (kinds.py) add the fault; aftermath.py plays out the rest.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from .clocks import Host, make_hosts
from .nccl_torch import Rec, healthy_warnings, nccl_bootstrap, nccl_init_complete, nccl_version, py

FRAMEWORK = {"slurm_tasks": "torch", "kubeflow": "torch", "ray_train": "torch", "mpirun_horovod": "horovod",
             "jax_slurm": "jax"}


@dataclass
class Ev:
    t: float
    rank: int | None  # the process that printed it (None: a launcher, a kernel, the scheduler)
    host: int  # index into Job.hosts
    chan: str  # out | err | kern | launch | ras | k8s
    recs: list[Rec]


@dataclass
class Job:
    rng: random.Random
    idx: int
    seed: int
    layout: str
    kind: str
    hosts: list[Host]
    ppn: int
    host_of: list[int]
    local_of: list[int]
    pid_of: list[int]
    epoch: dt.datetime
    torch_new: bool
    nccl_info: bool
    nccl_ts: bool
    nccl_warn: bool  # NCCL_DEBUG is WARN or INFO (INFO: nccl_info)
    ib: bool
    timeout_s: int
    period: float  # seconds per training step (one collective sequence number a step, plus a fixed base)
    name: str
    jobid: int
    events: list[Ev] = field(default_factory=list)
    exits: dict[int, tuple[float, int]] = field(default_factory=dict)  # rank -> (true time, code or -signal)
    hung: set[int] = field(default_factory=set)
    dead_hosts: dict[int, float] = field(default_factory=dict)
    kernel_logs: bool = True
    kill_on_bad_exit: bool = True
    label: dict = field(default_factory=dict)

    @property
    def world(self) -> int:
        return len(self.host_of)

    @property
    def framework(self) -> str:
        return FRAMEWORK[self.layout]

    def ranks_on(self, h: int) -> list[int]:
        return [r for r in range(self.world) if self.host_of[r] == h]

    def add(self, t: float, rank: int | None, host: int, chan: str, recs: list[Rec]) -> None:
        self.events.append(Ev(t, rank, host, chan, recs))

    def say(self, t: float, rank: int, recs: list[Rec], chan: str = "err") -> None:
        self.add(t, rank, self.host_of[rank], chan, recs)

    def kern(self, t: float, host: int, lines: list[str]) -> None:
        self.add(t, None, host, "kern", [Rec("raw", "", "", x) for x in lines])

    def seq_at(self, t: float) -> int:
        return 40 + int(t / self.period)


def new_job(rng: random.Random, idx: int, seed: int, layout: str, kind: str) -> Job:
    nodes = rng.choice((2, 2, 3, 4, 4, 6, 8))
    if layout == "jax_slurm":
        ppn = 1  # one JAX process per host driving all its local GPUs
        gpus = 8
    else:
        ppn = rng.choice((4, 8, 8))
        gpus = ppn
    hosts = make_hosts(rng, nodes, gpus, wide_skew=rng.random() < 0.35)
    world = nodes * ppn
    by_node = layout == "mpirun_horovod" and rng.random() < 0.5  # mpirun --map-by node: round-robin over hosts
    host_of = [r % nodes if by_node else r // ppn for r in range(world)]
    local_of = [r // nodes if by_node else r % ppn for r in range(world)]
    if layout == "ray_train":  # Ray orders workers by node, and the node order is not the host list's order
        order = list(range(nodes))
        rng.shuffle(order)
        host_of = [order[r // ppn] for r in range(world)]
    base_pid = rng.randint(3000, 90000)
    pids = [base_pid + 7 * r + rng.randint(0, 5) for r in range(world)]
    start = dt.datetime(2026, rng.randint(1, 11), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59),
                        rng.randint(0, 59), rng.randint(0, 999999), tzinfo=dt.UTC)
    name = rng.choice(("llama-ft", "pretrain-7b", "vit-h14", "moe-8x", "gpt-neox", "sft-run", "t5-xl", "dit-xl"))
    return Job(rng=rng, idx=idx, seed=seed, layout=layout, kind=kind, hosts=hosts, ppn=ppn, host_of=host_of,
               local_of=local_of, pid_of=pids, epoch=start, torch_new=rng.random() < 0.75,
               nccl_info=(info := rng.random() < 0.45), nccl_ts=rng.random() < 0.3,
               nccl_warn=info or rng.random() < 0.4,
               ib=rng.random() < 0.7,
               timeout_s=rng.choice((600, 600, 1800, 1200)), period=rng.uniform(0.3, 1.6), name=name,
               jobid=rng.randint(100000, 9999999), kernel_logs=rng.random() < 0.75,
               kill_on_bad_exit=rng.random() < 0.5)


def startup(job: Job) -> None:
    """Init lines every rank prints, rank 0's progress up to the fault, and healthy-run distractors."""
    rng = job.rng
    version = rng.choice(("2.29.3", "2.29.7", "2.30.4", "2.30.7"))  # formats checked at these tags
    job.label["nccl_version"] = version
    comm, comm_id = f"0x{rng.randint(0x55d000000000, 0x55dfffffffff):x}", f"{rng.getrandbits(64):016x}"
    if job.framework != "jax" and job.nccl_info:
        job.say(6.0, 0, [nccl_version(version)])
        for r in range(job.world):
            h = job.hosts[job.host_of[r]]
            t = 6.0 + rng.uniform(0, 2.5)
            job.say(t, r, [nccl_bootstrap(rng.choice(("eth0", "ens5", "bond0")) if not job.ib else "ib0", h.ip)])
            job.say(t + rng.uniform(3, 9), r, [nccl_init_complete(comm, r, job.world, job.local_of[r],
                                                                   h.pci_buses[job.local_of[r]], comm_id)])
    distractors(job)


def distractors(job: Job) -> None:
    """Healthy warnings, a retry that succeeds, lines that look alarming and are not."""
    rng = job.rng
    master = job.hosts[0].name
    if job.framework == "torch":
        warns = healthy_warnings()
        for r in rng.sample(range(job.world), k=min(job.world, rng.randint(1, 4))):  # c10d client retries, then joins
            w = warns[0][0]
            job.say(rng.uniform(0.5, 4.0), r, [Rec(w.style, w.level, w.where, w.msg.format(master=master))])
        if rng.random() < 0.6:
            for r in range(job.world):
                job.say(rng.uniform(20, 30), r, warns[1])
        if rng.random() < 0.5:
            r = rng.randrange(job.world)
            w = warns[2][0]
            job.say(rng.uniform(8, 12), r, [Rec(w.style, w.level, w.where,
                                                w.msg.format(pgr=f"[rank{r}]", gpu=job.local_of[r]))])
    if rng.random() < 0.5:  # the hub timing out once, then the download going through
        r = rng.randrange(job.world)
        job.say(rng.uniform(12, 18), r, py("'(ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', "
                                           "port=443): Read timed out. (read timeout=10)\"), '(Request ID: "
                                           f"{rng.getrandbits(32):08x})')' thrown while requesting HEAD https://"
                                           "huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json",
                                           "Retrying in 1s [Retry 1/5]."))
        # huggingface_hub/utils/_http.py http_backoff ('Retrying in {sleep}s [Retry {n}/{max}].')


def progress(job: Job, until: float) -> None:
    """The training loop's own prints: rank 0 (or process 0) only, one line every few dozen steps."""
    rng = job.rng
    every = rng.choice((10, 20, 50))
    step, t, loss = 0, 35.0, rng.uniform(6, 9)
    while t < until:
        step += every
        t = 35.0 + step * job.period
        if t >= until:
            break
        loss = max(0.9, loss * rng.uniform(0.985, 0.999))
        text = (f"step {step:>6d} | loss {loss:.4f} | lr {3e-4 * min(1.0, step / 2000):.3e} | "
                f"grad_norm {rng.uniform(0.2, 1.8):.3f} | {rng.uniform(0.8, 1.4) * 1e4 * job.world:,.0f} tok/s")
        job.say(t, 0, py(text), chan="out")
