"""Scenarios where a node, the network, the store or the job's configuration fails: the answer is a host, rank 0
as the store's owner, or nobody in particular."""

from __future__ import annotations

from datetime import timedelta

from simulate import lines as L
from simulate.cascade import Failure, Knobs, agents, fail_time, sockets_break, start, timeouts
from simulate.cluster import START, Job, Kind
from simulate.ranks import SEQ

DOCKER0 = "172.17.0.1"


def _node(job: Job) -> int:
    return job.c.rng.randrange(job.c.nodes)


def nic_failure(job: Job, knobs: Knobs) -> Failure:
    """One node's NIC fails: its peers' IB completion errors name its address; its own ranks blame everyone."""
    c = job.c
    bad = _node(job)
    t = fail_time(c)
    start(job, knobs, t, ib=True)
    on_bad = set(c.ranks_on(bad))
    for r in sorted(on_bad):
        peers = [p for p in (r + c.gpus_per_node, r - c.gpus_per_node) if 0 <= p < c.world_size and p not in on_bad]
        peers += [c.rng.randrange(c.world_size) for _ in range(2)]
        for p in dict.fromkeys(x for x in peers if x not in on_bad):
            job.rank(p).add(t + timedelta(seconds=c.rng.uniform(0, 3)),
                            L.ib_completion(c, p, c.ib_ip(r), 50000 + r), Kind.COLLATERAL)
            job.rank(r).add(t + timedelta(seconds=c.rng.uniform(0, 3)),
                            L.ib_completion(c, r, c.ib_ip(p), 50000 + p), Kind.CAUSE)
    if c.rng.random() < 0.5:
        r = c.rng.choice(sorted(on_bad))
        job.rank(r).add(t - timedelta(seconds=1), L.ib_port_error(c, r), Kind.CAUSE)
    why = "unhandled system error (run with NCCL_DEBUG=INFO for details)"
    times = timeouts(job, t, SEQ, [r for r in range(c.world_size) if r not in on_bad], knobs, True, why)
    for r in on_bad:
        times[r] = t + timedelta(seconds=c.rng.uniform(2, 60))
        job.rank(r).extend(times[r], L.watchdog_error(c, r, times[r], SEQ, why), Kind.CAUSE)
    codes = agents(job, t, {}, times)
    return Failure(None, c.host_name(bad), "ib", codes, protect=on_bad)


def wrong_ifname(job: Job, knobs: Knobs) -> Failure:
    """NCCL_SOCKET_IFNAME is wrong on one node: it advertises docker0, and whoever connects to it fails."""
    c = job.c
    bad = _node(job) if c.nodes > 1 else 0
    start(job, knobs, START + timedelta(minutes=1), ifname={bad: ("docker0", DOCKER0)})
    t = START + timedelta(seconds=25)
    on_bad = c.ranks_on(bad)
    root = 0 if bad != 0 else on_bad[-1] + 1  # the bootstrap root connects back to every rank
    callers = {root, (on_bad[0] - 1) % c.world_size} - set(on_bad)  # and the ring predecessor connects to it
    for r in sorted(callers):
        warn = L.connect_failed(c, r, DOCKER0, 40000 + c.ranks_on(bad)[0], "No route to host")
        job.rank(r).add(t, warn, Kind.COLLATERAL)
        job.rank(r).extend(t, L.nccl_error(c, r, "unhandled system error (run with NCCL_DEBUG=INFO for details)",
                                           warn.split("NCCL WARN ")[1]), Kind.COLLATERAL)
    for shard in job.shards.values():  # nobody trained: set-up never completed
        shard.lines = [ln for ln in shard.lines if "step " not in ln.text]
    codes = agents(job, t, {min(callers): 1}, {}) if callers else {}
    return Failure(None, c.host_name(bad), "socket|network|interface|unreachable", codes,
                   protect=set(c.ranks_on(bad)) | callers)


def store_master_death(job: Job, knobs: Knobs) -> Failure:
    """Rank 0, which hosts the TCPStore, dies; every rank's store client loses it and names its host."""
    c = job.c
    t = fail_time(c)
    start(job, knobs, t)
    silent = c.rng.random() < 0.5
    if not silent:
        job.rank(0).extend(t, L.traceback(0, L.TRAIN_FRAMES, "KeyError: 'optimizer_state'"), Kind.CAUSE)
    sockets_break(job, 0, t)
    master = c.host(0)
    for r in range(1, c.world_size):
        t_r = t + timedelta(seconds=c.rng.uniform(1, 30))
        job.rank(r).extend(t_r, L.store_recv_failed(c, r, t_r, master), Kind.COLLATERAL)
    times = timeouts(job, t, SEQ, range(1, c.world_size), knobs, c.rng.random() < 0.7)
    codes = agents(job, t, {0: -9 if silent else 1}, times)
    return Failure(0, master, "store|oom|kill|signal|exit" if silent else "python|exception", codes, protect={0})


def job_config(job: Job, knobs: Knobs) -> Failure:
    """A configuration every rank shares is wrong: every rank fails the same way at start-up; nobody initiated."""
    c = job.c
    variant = c.rng.choice(sorted(L.JOB_WIDE))
    t = START + timedelta(seconds=20)
    for r in range(c.world_size):
        text = L.JOB_WIDE[variant].format(head=L.head(c, r), r=r)
        job.rank(r).add(t + timedelta(seconds=c.rng.uniform(0, 2)), text, Kind.CAUSE)
    codes = {str(r): 1 for r in range(c.world_size)}
    hints = {"no_interface": "interface|socket", "no_kernel_image": "kernel_image|arch|image",
             "ifname_everywhere": "unreachable|network"}[variant]
    return Failure(None, None, hints, codes)


def slurm_node_failure(job: Job, knobs: Knobs) -> Failure:
    """Slurm loses a node: nothing of it arrives; the scheduler says so and the peers' sockets close on it."""
    c = job.c
    lost = _node(job) if c.nodes > 1 else 0
    t = fail_time(c)
    start(job, knobs, t)
    gone = set(c.ranks_on(lost))
    for r in sorted(gone):
        sockets_break(job, r, t)
        job.drop_rank(r)
    times = timeouts(job, t, SEQ, [r for r in range(c.world_size) if r not in gone], knobs, True)
    batch_host = c.host_name(0 if lost != 0 else min(1, c.nodes - 1))
    job.scheduler("slurm-881234.out").extend(t + timedelta(seconds=45), L.slurm_node_failure(
        c.host_name(lost), 881234, batch_host, c.node_clock(0, t + timedelta(seconds=45))), Kind.CAUSE)
    codes = agents(job, t, {}, times)
    for r in gone:
        codes.pop(str(r), None)
    for key in [k for k in job.shards if k.startswith(f"{c.host_name(lost)}/")]:
        del job.shards[key]
    for shard in job.shards.values():  # a lost peer's own ranks print nothing, so no line about them is collateral
        shard.lines = [ln for ln in shard.lines if not (ln.kind is Kind.COLLATERAL and shard.rank in gone)]
    return Failure(None, c.host_name(lost), "node_fail|slurm", codes)
