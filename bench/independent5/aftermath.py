"""The collateral storm after the initiating fault: ring peers on other hosts see the network break, everyone
else waits in the collective until ProcessGroupNCCL's watchdog fires, and with the flight recorder every rank
is told to dump. Launchers cut this short as they do (launchers.py)."""

from __future__ import annotations

from .story import Ev, Job, ring_peers
from .texts import dump_signal, ib_completion, remote_error, socket_closed, watchdog_timeout

OPS = (("ALLREDUCE", 131_334_144), ("_ALLGATHER_BASE", 262_668_288), ("_REDUCE_SCATTER_BASE", 262_668_288))


def _net_error(job: Job, r: int, t: float, peer_host: int) -> None:
    ph = job.hosts[peer_host]
    port = job.rng.randint(35000, 60999)
    last = ib_completion(ph.ip, port, job.host_of(r).ip, job.local[r]) if job.ib else socket_closed(ph.ip, port)
    lines = []
    if job.nccl_debug:  # the WARN comes from NCCL's own logger first (net_ib.cc / socket.cc)
        lines.append(("nccl|WARN|net_ib.cc:1537" if job.ib else "nccl|WARN|socket.cc:49", last))
    job.say(r, t, lines + remote_error(r, job.nccl_version, last, job.new_torch))
    job.end(r, t + 0.3, -6)


def _watchdogs(job: Job, t_coll: float, skip: set[int]) -> tuple[float, int]:
    """Everyone still waiting times out TIMEOUT after the collective began; returns the first timeout (time,
    rank)."""
    op, numel = OPS[job.seq % len(OPS)]
    first: tuple[float, int] | None = None
    for r in range(job.world):
        if r in skip:
            continue
        t = t_coll + job.timeout_s + job.rng.uniform(0.0, 2.5)
        if not job.alive_at(r, t):
            continue
        ran = int((t - t_coll) * 1000)
        job.say(r, t, watchdog_timeout(r, job.seq, op, numel, job.timeout_s * 1000, ran, job.new_torch))
        job.end(r, t + 0.4, -6)
        first = (t, r) if first is None else min(first, (t, r))
    return first if first is not None else (t_coll + job.timeout_s, 0)


def _dumps(job: Job, t_first: float, first_rank: int, straggler: int | None) -> None:
    """With the flight recorder every live rank is told to dump; the straggler's last enqueued work is S - 1."""
    for r in range(job.world):
        t = t_first + job.rng.uniform(0.01, 0.4)
        if not job.alive_at(r, t):
            continue
        behind = r == straggler
        lines = dump_signal(r, first_rank, job.seq - 1 if behind else job.seq, job.seq - 1)
        job.events.append(_ev(job, r, t - 0.39, lines[0]))  # before its own teardown
        if behind:
            job.evidence = lines[0][1]


def _ev(job: Job, r: int, t: float, line: tuple[str, str]) -> Ev:
    return Ev(t, job.rank_host[r], r, "rank", line[0], line[1])


def play(job: Job, mode: str, tf: float) -> None:
    if mode in ("none", "job"):
        return
    if mode == "link":
        _link(job, tf)
        return
    dead: set[int] = set()
    if mode == "exit" and job.culprit is not None:
        dead = {job.culprit}
    elif mode == "host" and job.culprit_host is not None:
        dead = set(job.ranks_on(job.culprit_host))
    t_dead = min((job.ends[r][0] for r in dead), default=tf)
    skip = set(dead)
    if mode in ("exit", "host"):
        for d in sorted(dead):
            for p in ring_peers(job, d):
                if p in skip:
                    continue
                if mode == "host" and not job.ib:
                    continue  # no FIN from a dead host: the socket peers just wait, like everyone else
                delay = job.rng.uniform(15, 38) if job.ib else job.rng.uniform(0.02, 0.8)
                _net_error(job, p, t_dead + delay, job.rank_host[d])
                skip.add(p)
    if mode == "hang" and job.culprit is not None:
        skip.add(job.culprit)
    t_first, r_first = _watchdogs(job, tf, skip)
    if job.flight_recorder:
        _dumps(job, t_first, r_first, job.culprit if mode == "hang" else None)


def _link(job: Job, tf: float) -> None:
    """Both ends of the flapped link get retry-exceeded completions, each naming the other's address."""
    h = job.culprit_host if job.culprit_host is not None else 0
    n = len(job.hosts)
    lr = job.rng.randrange(job.nproc)
    mine = next(r for r in job.ranks_on(h) if job.local[r] == lr)
    other_host = (h + 1) % n
    theirs = next(r for r in job.ranks_on(other_host) if job.local[r] == lr)
    if job.nccl_debug:
        job.say(mine, tf + 0.05, [("nccl|WARN|net_ib.cc:106", "NET/IB : Got async event : port error")])
    t1, t2 = tf + job.rng.uniform(15, 38), tf + job.rng.uniform(15, 38)
    _net_error(job, mine, t1, other_host)
    _net_error(job, theirs, t2, h)
    _watchdogs(job, tf, {mine, theirs})
