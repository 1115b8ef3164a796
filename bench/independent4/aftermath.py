"""The collateral a fault causes, played out in true time, and how each launcher ends the job.

A kind sets the initiating facts (Job.exits, Job.hung, Job.dead_hosts) and calls play(). Every other rank then
meets a fate: its ring neighbours see the network break (IB retry-exceeded after the IB timeout, or the socket
closed at once), the rest hit the ProcessGroupNCCL watchdog after the collective timeout (torch) or the
coordination service's missed heartbeats (JAX). The launcher cuts the story short as launchers do: mpirun, srun
--kill-on-bad-exit and Ray Train kill everyone soon after the first bad exit; torchrun in a pod kills only its
own pod's workers; srun without --kill-on-bad-exit waits for every task.
"""

from __future__ import annotations

from . import launchers as L
from .clocks import slurm, wall
from .nccl_torch import Rec, ib_completion_error, ib_retry_hint, remote_error, socket_closed, watchdog_timeout
from .story import Job

SIG = {9: "Killed", 6: "Aborted", 11: "Segmentation fault", 15: "Terminated", 7: "Bus error"}


def _peer(job: Job, r: int) -> str:
    return f"{job.hosts[job.host_of[r]].ip}<{43000 + (r * 37) % 9000}>"


def _fates(job: Job, t_f: float, gone: dict[int, float]) -> dict[int, tuple[float, str]]:
    """What each surviving rank would print and when, if nothing killed it first."""
    rng, out = job.rng, {}
    first = min(gone.values()) if gone else None
    for r in range(job.world):
        if r in gone or r in job.hung:
            continue
        if job.framework == "jax":
            if first is not None:
                out[r] = (first + job.label.get("hb_timeout", 100) + rng.uniform(0.1, 2.5), "heartbeat")
            continue
        if job.framework == "horovod":
            continue  # Horovod's NCCL ops just wait; mpirun ends it
        near = [d for d in gone if d in ((r - 1) % job.world, (r + 1) % job.world)]
        if near and job.host_of[near[0]] != job.host_of[r]:
            silent = job.ib or near[0] in job.label.get("vanished", ())  # no FIN: wait out the IB / TCP timeout
            delay = rng.uniform(15, 38) if silent else rng.uniform(0.01, 0.8)
            out[r] = (gone[near[0]] + delay, f"remote:{near[0]}")
        else:
            out[r] = (t_f + rng.uniform(0, 2 * job.period) + job.timeout_s + rng.uniform(0.01, 0.9), "watchdog")
    return out


def _emit(job: Job, r: int, t: float, fate: str, seq: int) -> int:
    """Write rank r's collateral lines; return its exit code (or -signal)."""
    rng = job.rng
    if fate == "heartbeat":
        head, rest = L.jax_heartbeat_fatal(job.label["dead_task"])
        job.say(t, r, [Rec("absl", "E", "coordination_service_agent.cc:332", L.JAX_POLLED),
                       Rec("absl", "F", "client.h:77", head), *[Rec("raw", "", "", x) for x in rest]])
        return -6
    if fate.startswith("remote:"):
        d = int(fate.split(":")[1])
        hca = job.hosts[job.host_of[r]].ib_devs[job.local_of[r] % len(job.hosts[job.host_of[r]].ib_devs)]
        warn = ib_completion_error(_peer(job, d), hca, None) if job.ib else socket_closed(_peer(job, d))
        if job.nccl_warn:  # NCCL prints WARN lines only with NCCL_DEBUG=WARN or INFO; torch repeats the text anyway
            job.say(t, r, [warn] + (ib_retry_hint() if job.ib and job.nccl_info else []))
        job.say(t + 0.05, r, remote_error(job.label["nccl_version"], warn.msg))
        job.label.setdefault("exc", {})[r] = ("DistBackendError", "torch.distributed.DistBackendError: NCCL error in: "
                                              "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, remote "
                                              "process exited or there was a network error")
        return 1
    ran = int((job.timeout_s + rng.uniform(0.01, 0.9)) * 1000)
    job.say(t, r, watchdog_timeout(r, seq, "ALLREDUCE", job.label.get("numel", 26214400), job.timeout_s * 1000,
                                   ran, seq - 1))
    return -6


def play(job: Job, t_f: float, seq: int) -> None:
    rng = job.rng
    gone = {r: t for r, (t, _c) in job.exits.items()}
    vanished = set()
    for h, t in job.dead_hosts.items():
        for r in job.ranks_on(h):
            gone.setdefault(r, t)
            vanished.add(r)
    job.label["vanished"] = vanished
    if gone:  # JAX: the coordination service names the first task that stopped heartbeating
        job.label.setdefault("dead_task", min(gone, key=gone.get))
        job.label.setdefault("hb_timeout", rng.choice((10, 100)))
    fates = _fates(job, t_f, gone)
    if job.layout == "kubeflow":
        _kubeflow(job, fates, gone, seq)
        return
    candidates = sorted([(t, r, "init") for r, (t, _c) in job.exits.items()] +
                        [(t, r, f) for r, (t, f) in fates.items()])
    kills_all = job.layout in ("mpirun_horovod", "ray_train") or job.kill_on_bad_exit or job.dead_hosts
    t_kill = None
    if job.dead_hosts and job.layout in ("slurm_tasks", "jax_slurm"):
        t_kill = min(job.dead_hosts.values()) + rng.uniform(60, 240)  # slurmctld declares the node down
    if kills_all and candidates:
        first = candidates[0][0] + rng.uniform(0.2, 2.5)
        t_kill = first if t_kill is None else min(t_kill, first)
    for t, r, f in candidates:
        if f == "init" or (t_kill is not None and t > t_kill):
            continue
        job.exits[r] = (t + 0.1, _emit(job, r, t, f, seq))
    if t_kill is not None:
        for r in range(job.world):
            if r not in job.exits and r not in vanished:
                job.exits[r] = (t_kill, -15 if job.layout != "mpirun_horovod" else -9)
    job.label["t_kill"] = t_kill
    {"mpirun_horovod": _mpirun_end, "ray_train": _ray_end}.get(job.layout, _srun_end)(job)


def _first_bad(job: Job) -> tuple[int, float, int]:
    t, r = min((t, r) for r, (t, c) in job.exits.items() if c != 0 and r not in job.label["vanished"])
    return r, t, job.exits[r][1]


def _mpirun_end(job: Job) -> None:
    if job.dead_hosts:  # the HNP loses the orted on the dead node and tears the job down
        h = next(iter(job.dead_hosts))
        lines = L.orte_lost_daemon(job.jobid % 60000, job.hosts[0].name, h, job.hosts[h].name)
        job.add(job.dead_hosts[h] + job.rng.uniform(20, 90), None, 0, "launch", [Rec("raw", "", "", x) for x in lines])
        return
    if not job.exits:
        return
    r, t, code = _first_bad(job)
    t_end = job.label["t_kill"] or t
    if code < 0:
        lines = L.mpirun_noticed(r, job.pid_of[r], job.hosts[job.host_of[r]].name, -code, SIG.get(-code, "Killed"))
    else:
        lines = L.mpirun_nonzero(job.jobid % 60000, r, code)
    job.add(t_end, None, 0, "launch", [Rec("raw", "", "", x) for x in lines])


def _how(code: int) -> str:
    return f"Exited with exit code {code}" if code >= 0 else SIG.get(-code, "Killed")


def _srun_end(job: Job) -> None:
    """srun's own report, in the batch output: one line per host and exit status, in the order srun saw them."""
    groups: dict[tuple[int, str], list[int]] = {}
    first_t: dict[tuple[int, str], float] = {}
    for r, (t, code) in job.exits.items():
        if r in job.label["vanished"]:
            continue
        key = (job.host_of[r], _how(code))
        groups.setdefault(key, []).append(r)
        first_t[key] = min(first_t.get(key, t), t)
    t_kill = job.label["t_kill"]
    if job.dead_hosts:
        h, td = next(iter(job.dead_hosts.items()))
        tk = t_kill or td + 120
        job.add(tk - 1, None, 0, "launch", [Rec("raw", "", "", L.srun_node_failure(job.hosts[h].name))])
        stamp = slurm(wall(job.epoch, job.hosts[0], tk))
        job.add(tk, None, 0, "launch", [Rec("raw", "", "", L.slurmstepd_cancel(
            "JOB", str(job.jobid), job.hosts[0].name, stamp, "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS"))])
    elif t_kill is not None and job.label.get("cancel_why") is None:
        job.add(t_kill, None, 0, "launch", [Rec("raw", "", "", x) for x in L.srun_abort()])
        for h in range(len(job.hosts)):
            stamp = slurm(wall(job.epoch, job.hosts[h], t_kill + 0.2))
            job.add(t_kill + 0.2, None, h, "launch", [Rec("raw", "", "", L.slurmstepd_cancel(
                "STEP", f"{job.jobid}.0", job.hosts[h].name, stamp, "").replace(" DUE TO  ***", " ***"))])
    for (h, how), ranks in sorted(groups.items(), key=lambda kv: first_t[kv[0]]):
        tasks = _ranges(sorted(ranks))
        job.add(first_t[(h, how)] + 0.3, None, 0, "launch",
                [Rec("raw", "", "", L.srun_task_exit(job.hosts[h].name, tasks, how))])


def _ranges(rs: list[int]) -> str:
    out, start, prev = [], rs[0], rs[0]
    for x in [*rs[1:], None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if x is not None:
            start = prev = x
    return ",".join(out)


def _ray_end(job: Job) -> None:
    """The driver raises the first failed worker's error, then tears the worker group down."""
    if not job.exits:
        return
    r, t, code = _first_bad(job)
    h = job.hosts[job.host_of[r]]
    actor = f"{job.rng.getrandbits(128):032x}"
    if job.dead_hosts:
        hd = next(iter(job.dead_hosts))
        r = job.ranks_on(hd)[0]
        h = job.hosts[hd]
        t = job.dead_hosts[hd] + job.rng.uniform(30, 60)
        node = job.label["ray_node_ids"][hd]
        job.add(t - 1, None, 0, "launch",
                [Rec("pylog", "WARNING", "worker.py:2072", "\n".join(L.ray_node_dead(node, h.ip)))])
        lines = L.ray_actor_died(actor, job.pid_of[r], h.ip, job.label["ray_ns"],
                                 f"The actor died because its node has died. Node Id: {node}")
    elif code < 0:
        lines = L.ray_actor_died(actor, job.pid_of[r], h.ip, job.label["ray_ns"], L.RAY_SYSTEM_ERROR)
    else:
        exc = job.label.get("exc", {}).get(r, ("RuntimeError", "RuntimeError: worker raised"))
        lines = [L.ray_task_error(exc[0], job.pid_of[r], h.ip, actor), "  File \"/workspace/train.py\", line 187, "
                 "in train_loop_per_worker", exc[1]]
        lines.insert(0, "Traceback (most recent call last):")
    job.add(t + job.rng.uniform(0.5, 3.0), None, 0, "launch", [Rec("raw", "", "", x) for x in lines])


def _kubeflow(job: Job, fates: dict[int, tuple[float, str]], gone: dict[int, float], seq: int) -> None:
    """torchrun in each pod: the agent kills its own pod's workers at the next poll after a local failure."""
    rng = job.rng
    react = 0.1 if job.torch_new else 5.0
    pods_done: dict[int, float] = {}
    if "k8s_dead_pod" in job.label:  # a pod whose container was OOM-killed whole: no agent left to report
        h_dead, t_dead = job.label["k8s_dead_pod"]
        pods_done[h_dead] = t_dead
    pending = sorted([(t, r, "init") for r, (t, c) in job.exits.items()] + [(t, r, f) for r, (t, f) in fates.items()])
    for t, r, f in pending:
        h = job.host_of[r]
        if h in pods_done and t > pods_done[h]:
            continue
        if f != "init":
            job.exits[r] = (t + 0.1, _emit(job, r, t, f, seq))
        if h not in pods_done:
            pods_done[h] = job.exits[r][0] + react
    for h, tk in pods_done.items():
        if h in job.dead_hosts:
            continue
        local = job.ranks_on(h)
        failed = sorted((job.exits[r][0], r) for r in local if r in job.exits and job.exits[r][0] <= tk)
        t0, r0 = failed[0]
        failed_ranks = {x for _t, x in failed}
        agent = [Rec("agent", "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                     L.agent_sigterm(job.pid_of[x]))
                 for x in local if x not in failed_ranks]
        agent.append(Rec("agent", "E", "torch/distributed/elastic/multiprocessing/api.py:869",
                         L.agent_failed(job.exits[r0][1], job.local_of[r0], job.pid_of[r0])))
        stamp = f"{wall(job.epoch, job.hosts[h], t0):%Y-%m-%d_%H:%M:%S}"
        agent += [Rec("raw", "", "", x) for x in ["Traceback (most recent call last):",
                  '  File "/usr/local/bin/torchrun", line 8, in <module>', "    sys.exit(main())",
                  *L.child_failed_table("train.py", stamp, job.hosts[h].name, r0, job.local_of[r0],
                                         job.exits[r0][1], job.pid_of[r0])]]
        job.add(tk, None, h, "launch", agent)
        for x in local:
            job.exits.setdefault(x, (tk, -15))
    first_pod = min(pods_done, key=pods_done.get)
    rtype = "Master" if first_pod == 0 else "Worker"
    job.label["k8s_failed"] = (pods_done[first_pod] + rng.uniform(1, 5), L.pytorchjob_failed(job.name, 1, rtype))
