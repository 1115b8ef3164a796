"""Scenarios where one process starts the failure: the answer is a rank (and its host)."""

from __future__ import annotations

from datetime import datetime, timedelta

from simulate import hostile_lines as H
from simulate import lines as L
from simulate.cascade import (
    Failure,
    Knobs,
    agents,
    fail_time,
    flight_dump,
    sockets_break,
    start,
    timeouts,
)
from simulate.cluster import START, TIMEOUT, Job, Kind

SEQ = 4821


def _pick(job: Job) -> int:
    return job.victim if job.victim is not None else job.c.rng.randrange(job.c.world_size)


def _dies(job: Job, knobs: Knobs, victim: int, code: int) -> tuple[Failure, datetime]:
    """The victim's process is gone at t_fail: neighbours lose their sockets, everyone else times out."""
    c = job.c
    t_fail = fail_time(c)
    start(job, knobs, t_fail)
    sockets_break(job, victim, t_fail)
    # Usually the ring breaks at once; sometimes the survivors hang until the watchdog's timeout.
    fast = knobs.cascade == "abort" or (knobs.cascade == "auto" and c.rng.random() < 0.7)
    times = timeouts(job, t_fail, SEQ, [r for r in range(c.world_size) if r != victim], knobs, fast)
    codes = agents(job, t_fail, {victim: code}, times)
    return Failure(victim, c.host(victim), "", codes, protect={victim}), t_fail


def cuda_oom(job: Job, knobs: Knobs) -> Failure:
    """torch.OutOfMemoryError on one rank; it exits 1 and the rest time out."""
    victim = _pick(job)
    failure, t = _dies(job, knobs, victim, 1)
    job.rank(victim).extend(t, L.cuda_oom(job.c, victim), Kind.CAUSE)
    failure.hints = "cuda.oom"
    return failure


def oom_killer(job: Job, knobs: Knobs) -> Failure:
    """The host OOM killer SIGKILLs one rank: it prints nothing; only its node's kernel log tells."""
    c = job.c
    victim = _pick(job)
    failure, t = _dies(job, knobs, victim, -9)
    dmesg = job.node(c.node(victim), "dmesg.log")
    dmesg.add(t - timedelta(hours=2), L.dmesg_noise(c, victim, t - timedelta(hours=2)))
    dmesg.extend(t, L.dmesg_oom(c, victim, t), Kind.CAUSE)
    failure.hints = "oom"
    return failure


def sigsegv(job: Job, knobs: Knobs) -> Failure:
    """A native crash in one rank: exit -11, sometimes a kernel segfault line, never a Python traceback."""
    c = job.c
    victim = _pick(job)
    failure, t = _dies(job, knobs, victim, -11)
    if c.rng.random() < 0.7:
        job.node(c.node(victim), "dmesg.log").add(t, L.dmesg_segfault(c, victim, t), Kind.CAUSE)
    failure.hints = "segfault|segv"
    return failure


def ecc(job: Job, knobs: Knobs) -> Failure:
    """An uncorrectable ECC error on one GPU: its rank raises a CUDA error, the kernel may log Xid 48."""
    c = job.c
    victim = _pick(job)
    failure, t = _dies(job, knobs, victim, 1)
    job.rank(victim).extend(t, L.cuda_error(victim, "uncorrectable ECC error encountered"), Kind.CAUSE)
    if c.rng.random() < 0.7:
        job.node(c.node(victim), "dmesg.log").extend(t, L.dmesg_xid(c, victim, t, 48), Kind.CAUSE)
    failure.hints = "ecc|xid.48"
    return failure


def xid79(job: Job, knobs: Knobs) -> Failure:
    """One GPU falls off the bus: the kernel's Xid 79 names its PCI address; its rank may say nothing at all."""
    c = job.c
    victim = _pick(job)
    t = fail_time(c)
    start(job, knobs, t)
    job.node(c.node(victim), "dmesg.log").extend(t, L.dmesg_xid(c, victim, t, 79), Kind.CAUSE)
    noticed = c.rng.random() < 0.5  # else its process hangs in the driver and prints nothing
    if noticed:
        lost = L.watchdog_cuda_error(c, victim, t, "unspecified launch failure")
        job.rank(victim).add(t + timedelta(seconds=2), lost, Kind.CAUSE)
    times = timeouts(job, t, SEQ, [r for r in range(c.world_size) if r != victim], knobs)
    codes = agents(job, t, {victim: -6} if noticed else {}, times)
    return Failure(victim, c.host(victim), "xid", codes, protect={victim})


def straggler(job: Job, knobs: Knobs) -> Failure:
    """One rank never enters collective #SEQ (stuck in its data loader, or calling another collective).

    Every other rank times out on #SEQ; the straggler's own watchdog has nothing pending, so it only prints the
    dump signal with 'last enqueued NCCL work: SEQ-1'. With desync debug on, rank 0 names it; with the Flight
    Recorder on, every dump shows who never joined.
    """
    c = job.c
    victim = _pick(job)
    t = fail_time(c)
    start(job, knobs, t)
    others = [r for r in range(c.world_size) if r != victim]
    times = timeouts(job, t, SEQ, others, knobs)
    t_out = min(times.values())
    mismatch = c.rng.random() < 0.3
    stuck = job.rank(victim)
    if knobs.silent_straggler:
        silent_straggler(job, victim, others, t, t_out)
    elif mismatch:  # it called broadcast where the others called all_reduce: it times out too, on another op
        lines = L.watchdog(c, victim, t_out, SEQ)
        stuck.extend(t_out, [x.replace("OpType=ALLREDUCE", "OpType=BROADCAST") for x in lines], Kind.CAUSE)
    else:
        stuck.extend(t_out + timedelta(seconds=1), L.dump_signal(c, victim, t_out, SEQ - 1, SEQ - 1, others[0]),
                     Kind.CAUSE)
    mismatch = mismatch and not knobs.silent_straggler
    if knobs.flight_recorder:
        flight_dump(job, victim, SEQ if mismatch else SEQ - 1, SEQ - 1, t_out, knobs.flight_recorder,
                    "nccl:broadcast" if mismatch else None)
    if knobs.desync_debug and victim != 0 and not knobs.silent_straggler:
        job.rank(0).extend(t_out, L.desync_report(c, 0, t_out, [victim], SEQ), Kind.COLLATERAL)
    codes = agents(job, t, {}, times)
    return Failure(victim, c.host(victim), "desync|hang|watchdog|dump|mismatch", codes, protect={victim})


def silent_straggler(job: Job, victim: int, others: list[int], t: datetime, t_out: datetime) -> None:
    """Issue 22, pattern 5: the straggler prints nothing at all, its last step a step before everyone's. The
    others' watchdogs name SeqNum SEQ, newer than anything it completed; they may have queued more behind it
    (last enqueued > SEQ). Half the time the job runs with TORCH_CPP_LOG_LEVEL=INFO, and every rank's periodic
    work update shows who is a collective behind."""
    c, h = job.c, job.c.hrng
    stuck = job.rank(victim)
    steps = sorted((ln for ln in stuck.lines if "] step " in ln.text), key=lambda ln: ln.time)
    if steps:
        stuck.lines.remove(steps[-1])
    ahead = h.randrange(3)
    for r in others:  # the watchdog's PG status: enqueued past SEQ when the rank queued more work behind it
        for ln in job.rank(r).lines:
            if ln.kind is Kind.COLLATERAL and "last enqueued work: " in ln.text:
                ln.text = ln.text.replace(f"last enqueued work: {SEQ},", f"last enqueued work: {SEQ + ahead},")
    if h.random() < 0.5:
        when = t_out - timedelta(seconds=h.uniform(30, 60))
        for r in [victim, *others]:
            enq, done = (SEQ - 1, SEQ - 1) if r == victim else (SEQ + ahead, SEQ - 1)
            job.rank(r).add(when + timedelta(milliseconds=h.uniform(0, 900)), H.work_update(c, r, when, enq, done),
                            Kind.CAUSE if r == victim else Kind.INFO)


def bootstrap_exception(job: Job, knobs: Knobs) -> Failure:
    """A rank raises during set-up, before init_process_group completes; the others wait at the store."""
    c = job.c
    victim = 1 + c.rng.randrange(c.world_size - 1)
    t = START + timedelta(seconds=40)
    for r in range(c.world_size):
        job.rank(r).add(t - timedelta(seconds=5), f"[rank{r}]: loading {c.world_size} shards from /data/shards")
    job.rank(victim).extend(t, L.missing_shard(victim), Kind.CAUSE)
    times = {}
    for r in range(c.world_size):
        if r == victim:
            continue
        text = L.store_clients_timeout(c.world_size - 1, c.world_size) if r == 0 else L.store_wait_timeout(r)
        times[r] = t + TIMEOUT + timedelta(seconds=c.rng.uniform(0, 3))
        job.rank(r).add(times[r], text, Kind.COLLATERAL)
    codes = agents(job, t, {victim: 1}, times, others=1)  # DistStoreError: an exception, not a watchdog abort
    return Failure(victim, c.host(victim), "python|exception|file", codes, protect={victim})


def unknown_error(job: Job, knobs: Knobs) -> Failure:
    """A failure no catalog entry knows, on one rank, before the cascade: the differential view must find it."""
    victim = _pick(job)
    failure, t = _dies(job, knobs, victim, 1)
    job.rank(victim).extend(t, L.uncatalogued(victim, 4800 + knobs.steps), Kind.CAUSE)
    failure.hints = ""
    return failure


def two_independent(job: Job, knobs: Knobs) -> Failure:
    """A CUDA OOM on one rank, then, unrelated, a GPU off the bus on another node before the timeouts fire."""
    c = job.c
    first = _pick(job)
    other_nodes = [n for n in range(c.nodes) if n != c.node(first)] or [c.node(first)]
    second = c.rng.choice([r for r in c.ranks_on(c.rng.choice(other_nodes)) if r != first])
    failure, t = _dies(job, knobs, first, 1)
    job.rank(first).extend(t, L.cuda_oom(c, first), Kind.CAUSE)
    t2 = t + timedelta(seconds=c.rng.uniform(30, 200))
    job.node(c.node(second), "dmesg.log").extend(t2, L.dmesg_xid(c, second, t2, 79), Kind.CAUSE)
    shard = job.rank(second)  # its GPU is gone: it hangs and prints nothing more
    shard.lines = [ln for ln in shard.lines if ln.kind is not Kind.COLLATERAL]
    failure.hints = "cuda.oom"
    failure.second = (second, c.host(second))
    failure.protect.add(second)
    return failure
