"""How each launcher ends the job and what it prints while doing so: DeepSpeed's launch.py + pdsh, Open MPI's
mpirun (no --tag-output), torchrun agents (under torchx / Volcano and under `accelerate launch` in srun), and
vLLM's executor. Each `end_<layout>` reads the ranks' ends from the story and kills the survivors."""

from __future__ import annotations

from .story import Job

SIGNAME = {9: "Killed", 6: "Aborted", 11: "Segmentation fault", 15: "Terminated"}


def _first_bad(job: Job, ranks: list[int]) -> tuple[float, int] | None:
    bad = [(job.ends[r][0], r) for r in ranks if r in job.ends and job.ends[r][1] != 0]
    return min(bad) if bad else None


def _kill(job: Job, ranks: list[int], t: float, sig: int = -15) -> list[int]:
    killed = [r for r in ranks if job.alive_at(r, t)]
    for r in killed:
        job.end(r, t, sig)
    return killed


# --- DeepSpeed launch.py + pdsh (deepspeed/launcher/launch.py main / sigkill_handler; runner.py PDSHRunner) ---

def end_deepspeed_pdsh(job: Job) -> None:
    """Each node's launch.py polls its children every second; on the first non-zero return code it logs
    `Killing subprocess P` for every child (terminate_process_tree) and `<cmd> exits with return code = N`, where
    cmd is the *last* local rank's command line (the loop variable left over from spawning) and N the failed
    child's code; pdsh then reports `pdsh@<head>: <host>: ssh exited with exit code N` (sys.exit(-9) -> 247)."""
    head = job.hosts[0].name
    for h in range(len(job.hosts)):
        local = job.ranks_on(h)
        if h in job.host_dead:
            t = job.host_dead[h] + job.rng.uniform(60, 130)  # ssh's ServerAlive keepalives give up
            job.note("launcher", 0, t, [f"pdsh@{head}: {job.hosts[h].name}: ssh exited with exit code 255"])
            continue
        first = _first_bad(job, local)
        if first is None:
            continue
        t = first[0] + job.rng.uniform(0.1, 1.0)
        code = job.ends[first[1]][1]
        for r in local:
            job.note("agent", h, t, [f"Killing subprocess {job.pids[r]}"], style="app|ds|INFO|launch.py:319:"
                     "sigkill_handler")
        _kill(job, local, t + 0.05)
        last = job.nproc - 1
        cmd = (f"['/usr/bin/python3', '-u', 'pretrain_gpt.py', '--local_rank={last}', '--deepspeed', "
               "'--deepspeed_config', 'ds_config.json', '--tensor-model-parallel-size', '2']")
        job.note("agent", h, t + 0.2, [f"{cmd} exits with return code = {code}"],
                 style="app|ds|ERROR|launch.py:325:sigkill_handler")
        job.note("launcher", 0, t + 0.5, [f"pdsh@{head}: {job.hosts[h].name}: ssh exited with exit code "
                                          f"{code % 256}"])


# --- Open MPI 4 mpirun without --tag-output (orte/tools/orterun/help-orterun.txt; errmgr help texts) ----------

def end_mpirun_plain(job: Job) -> None:
    everyone = list(range(job.world))
    lost = [(t, h) for h, t in job.host_dead.items()]
    first = _first_bad(job, [r for r in everyone if job.rank_host[r] not in job.host_dead])
    t_lost = min(t for t, _ in lost) + job.rng.uniform(20, 90) if lost else None
    if t_lost is not None and (first is None or t_lost < first[0]):
        h = lost[0][1]
        job.note("launcher", 0, t_lost, [
            "-" * 74, "ORTE has lost communication with a remote daemon.", "",
            f"  HNP daemon   : [[{job.extra['jobid']},0],0] on node {job.hosts[0].name}",
            f"  Remote daemon: [[{job.extra['jobid']},0],{h + 1}] on node {job.hosts[h].name}", "",
            "This is usually due to either a failure of the TCP network", "connection to the node, or possibly an "
            "internal failure of", "the daemon itself. We cannot recover from this failure, and",
            "therefore will terminate the job.", "-" * 74])
        _kill(job, everyone, t_lost + 0.5)
        return
    if first is None:
        return
    t, r = first
    code = job.ends[r][1]
    t += job.rng.uniform(0.2, 1.5)
    _kill(job, everyone, t)
    primary = ["-" * 74, "Primary job  terminated normally, but 1 process returned",
               "a non-zero exit code. Per user-direction, the job has been aborted.", "-" * 74]
    host = job.host_of(r).name
    if code < 0:  # prrte/ompi help-prun / help-orterun [orterun:proc-aborted-signal]
        block = ["-" * 74, f"mpirun noticed that process rank {r} with PID {job.pids[r]} on node {host} exited on "
                 f"signal {-code} ({SIGNAME.get(-code, 'Unknown signal')}).", "-" * 74]
        job.note("launcher", 0, t, (primary if job.rng.random() < 0.5 else []) + block)
    else:  # [orterun:non-zero-exit]
        job.note("launcher", 0, t, [
            *primary, "-" * 74, "mpirun detected that one or more processes exited with non-zero status, thus causing",
            "the job to be terminated. The first process to do so was:", "",
            f"  Process name: [[{job.extra['jobid']},1],{r}]", f"  Exit code:    {code}", "-" * 74])


# --- torchrun's agent (torch/distributed/elastic/agent/server/api.py, multiprocessing/api.py, errors/) ------

def agent_fail(job: Job, h: int, t: float, rdzv_node_rank: int) -> float:
    """The node's agent sees a failed worker at its next poll (0.1 s), SIGTERMs the rest, logs the failure and
    raises ChildFailedError with the first observed failure; returns when the agent process exits."""
    local = job.ranks_on(h)
    failed = sorted((job.ends[r][0], r) for r in local if r in job.ends and job.ends[r][1] != 0
                    and job.ends[r][0] <= t)
    _, r0 = failed[0]
    code = job.ends[r0][1]
    # SubprocessContext._poll logs the failure, then close() SIGTERMs the workers still running
    job.note("agent", h, t, [f"failed (exitcode: {code}) local_rank: {job.local[r0]} (pid: {job.pids[r0]}) "
                             "of binary: /usr/bin/python3"], style="agent|E|elastic/multiprocessing/api.py:869")
    others = _kill(job, local, t + 0.05)
    for r in others:
        job.note("agent", h, t + 0.01, [f"Sending process {job.pids[r]} closing signal SIGTERM"],
                 style="agent|W|elastic/multiprocessing/api.py:897")
    job.note("agent", h, t + 0.4, childfailed(job, h, failed, t))
    return t + 0.5


def childfailed(job: Job, h: int, failed: list[tuple[float, int]], t: float) -> list[str]:
    """ChildFailedError.format_msg's table (torch/distributed/elastic/multiprocessing/errors/__init__.py)."""
    from .clocks import _at
    bar = "=" * 60
    exe = "accelerate" if job.layout == "accelerate_srun" else "torchrun"  # accelerate's launch_command ends
    out = ["Traceback (most recent call last):", f'  File "/opt/venv/bin/{exe}", line 8, in <module>',  # in run()
           "    sys.exit(main())", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", bar,
           "train.py FAILED", "-" * 60, "Failures:"]
    rows: list[list[str]] = []
    for tt, r in failed:
        code = job.ends[r][1]
        stamp = f"{_at(tt, job.hosts[h], job.container_tz):%Y-%m-%d_%H:%M:%S}"
        tb = (f"Signal {-code} (SIG{ {9: 'KILL', 6: 'ABRT', 11: 'SEGV', 15: 'TERM'}.get(-code, 'KILL')}) received "
              f"by PID {job.pids[r]}") if code < 0 else "To enable traceback see: https://pytorch.org/docs/stable/" \
                                                        "elastic/errors.html"
        rows.append([f"[{len(rows)}]:", f"  time      : {stamp}", f"  host      : {job.hosts[h].name}",
                     f"  rank      : {r} (local_rank: {job.local[r]})", f"  exitcode  : {code} (pid: {job.pids[r]})",
                     "  error_file: <N/A>", f"  traceback : {tb}"])
    out += (rows[1:] and [x for row in rows[1:] for x in row]) or ["  <NO_OTHER_FAILURES>"]
    out += ["-" * 60, "Root Cause (first observed failure):"] + rows[0] + [bar]
    return out


def agent_sigterm(job: Job, h: int, t: float) -> None:
    """An agent told to stop (pod deleted, srun step cancelled): torch/distributed/elastic/agent/server/api.py
    `Received Signals.SIGTERM death signal, shutting down workers` and multiprocessing/api.py's SignalException."""
    local = [r for r in job.ranks_on(h) if job.alive_at(r, t)]
    if not local:
        return
    job.note("agent", h, t, ["Received Signals.SIGTERM death signal, shutting down workers"],
             style="agent|W|elastic/agent/server/api.py:704")
    for r in local:
        job.note("agent", h, t + 0.01, [f"Sending process {job.pids[r]} closing signal SIGTERM"],
                 style="agent|W|elastic/multiprocessing/api.py:897")
    _kill(job, local, t + 0.05)
    job.note("agent", h, t + 0.3, ["Traceback (most recent call last):",
                                   "torch.distributed.elastic.multiprocessing.api.SignalException: Process "
                                   f"{job.agent_pids[h]} got signal: 15"])
