"""How each launcher ends the job and what it writes about it.

- Flux (flux-framework/flux-core): ``--label-io`` prefixes ``R: `` (the task rank; doc/man1/flux-job.rst and the
  shell-plugin guide's ``flux run -N4 -n4 --label-io`` example); the doom plugin src/shell/doom.c (read) posts the
  first task exit and, ``exit-timeout`` (30 s by default) later, raises a fatal exception — the newer wording
  ``flux-shell[0]: FATAL: doom: rank R on host H exited and exit-timeout=30s has expired`` and ``job.exception
  type=exec severity=0 …`` as a public flux-framework experiment log prints them, with the oom plugin's
  ``ERROR: oom: Memory cgroup out of memory: killed 1 task on H.``; job-exec's ``lost contact with job shell on
  broker H (rank N)`` (src/modules/job-exec, found with find_string) and ``resource allocation expired`` (timeout
  exception, job-exec.c, found with find_string); ``flux-job: task(s) exited with exit code N`` / ``task(s)
  <strsignal>`` (flux job attach, public logs).
- MPICH Hydra ``mpiexec -l`` (``[R] `` per line) under PBS Pro: the ``BAD TERMINATION OF ONE OF YOUR APPLICATION
  PROCESSES`` block (``RANK r PID p RUNNING AT h`` + ``KILLED BY SIGNAL: 9 (Killed)``; for an exit code the
  older ``PID p RUNNING AT h`` + ``EXIT CODE: c`` + ``CLEANING UP REMAINING PROCESSES`` form), and
  ``[mpiexec@h] HYDT_bscu_wait_for_completion (tools/bootstrap/utils/bscu_wait.c:76): one of the processes
  terminated badly; aborting``: pmodels/mpich src/pm/hydra as public logs print them (found with find_string, not
  read in source); PBS's ``=>> PBS: job killed: walltime N exceeded limit M`` as public logs and site docs print it.
- PRRTE (Open MPI 5's ``mpirun``): help-prun.txt ``[prun:proc-aborted-strsignal]``, ``[prun:non-zero-exit]``,
  help-errmgr-base.txt ``[node-died]`` (openpmix/prrte, fetched 52d5e4b; ``prte_quit.c`` picks them, the process
  name ``[%s,%s]`` from util/name_fns.c); show_help frames them with a line of dashes. The ``[1,R]<stderr>: `` tag
  (``--output tag``, the old ``--tag-output``) as bench/independent4's README cites from ompi/prrte iof.
- Slurm srun (SchedMD/slurm src/srun, slurmstepd req.c): ``srun: error: H: task(s) …: Exited with exit code N`` /
  ``Killed`` / ``Aborted`` / ``Terminated``, ``srun: Terminating StepId=J.0``, ``*** STEP J.0 ON H CANCELLED AT
  … ***``, ``srun: error: Node failure on H``, ``*** JOB J ON H CANCELLED AT … DUE TO TIME LIMIT ***``."""

from __future__ import annotations

from .clocks import local, slurm_time
from .story import Job, Out, cut

SIG = {6: "Aborted", 9: "Killed", 11: "Segmentation fault", 14: "Alarm clock", 15: "Terminated"}
DASH = "-" * 74


def _say(job: Job, t: float, lines: list[str]) -> None:
    for i, x in enumerate(lines):
        job.launcher.append(Out(t + i * 1e-5, x))


def _worst(job: Job) -> str:
    """flux job attach reports the numerically greatest wait status of the tasks."""
    best = max((n << 8 if how == "exit" else n) for _, how, n in job.end.values())
    return f"exited with exit code {best >> 8}" if best >= 256 else SIG.get(best, f"signal {best}")


def flux(job: Job) -> None:
    h0 = job.hosts[0]

    def rel(h: int, t: float) -> str:
        return f"{local(job.hosts[h], t) - local(h0, job.t0):.3f}s"
    if job.kind == "walltime":
        _say(job, job.tf, [f"{rel(0, job.tf)}: job.exception type=timeout severity=0 resource allocation expired"])
        cut(job, job.tf, 14)
    else:
        if "oom_host" in job.label:
            h = job.label["oom_host"]
            t = job.tf + job.rng.uniform(0.02, 0.2)
            _say(job, t, [f"{rel(h, t)}: flux-shell[{h}]: ERROR: oom: Memory cgroup out of memory: killed 1 task "
                          f"on {job.hosts[h].name}.",
                          f"{rel(h, t + 0.04)}: flux-shell[{h}]: ERROR: oom: memory.peak = "
                          f"{job.rng.uniform(900, 1900):.3f}G"])
        first = job.first_end()
        t_kill = first[0] + 30 if first else float("inf")
        lost = [r for r in job.vanished]
        if lost:
            h = job.host_of(lost[0])
            t_lost = job.tf + job.rng.uniform(4, 40)
            if t_lost < t_kill:
                line = f"lost contact with job shell on broker {job.hosts[h].name} (rank {h})"
                _say(job, t_lost, [f"{rel(0, t_lost)}: job.exception type=node-failure severity=0 {line}"])
                job.label["launcher_line"] = line
                cut(job, t_lost, 15)
                _say(job, t_lost + 2, [f"flux-job: task(s) {_worst(job)}"])
                return
        if first:
            r1 = first[1]
            host = job.hosts[job.host_of(r1)].name
            line = f"rank {r1} on host {host} exited and exit-timeout=30s has expired"
            _say(job, t_kill, [f"{rel(0, t_kill)}: flux-shell[0]: FATAL: doom: {line}",
                               f"{rel(0, t_kill + 0.35)}: job.exception type=exec severity=0 {line}"])
            job.label["first_named"] = (r1, job.host_of(r1))
            cut(job, t_kill + 0.35, 15)
    _say(job, max(t for t, _, _ in job.end.values()) + 0.5, [f"flux-job: task(s) {_worst(job)}"])


def hydra(job: Job) -> None:
    head = job.hosts[0].name
    if job.kind == "walltime":
        lim = job.label["limit_s"]
        _say(job, job.tf, [f"=>> PBS: job killed: walltime {lim + job.rng.randint(1, 40)} exceeded limit {lim}"])
        cut(job, job.tf, 15)
        return
    lost = bool(job.vanished)
    first = job.first_end()
    t_notice = job.tf + job.rng.uniform(20, 120) if lost else float("inf")
    if first and first[0] < t_notice:
        t_kill = first[0] + job.rng.uniform(0.05, 1.5)
        blocks = sorted((t, r) for r, (t, _, _) in job.end.items() if t <= t_kill)
        cut(job, t_kill, 9)
        for k, (_t, r) in enumerate(blocks):
            _, how, n = job.end[r]
            host = job.hosts[job.host_of(r)].name
            if how == "signal":
                body = [f"=   RANK {r} PID {job.pids[r]} RUNNING AT {host}", f"=   KILLED BY SIGNAL: {n} "
                        f"({SIG.get(n, 'Unknown signal')})"]
            else:
                body = [f"=   PID {job.pids[r]} RUNNING AT {host}", f"=   EXIT CODE: {n}",
                        "=   CLEANING UP REMAINING PROCESSES", "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES"]
            _say(job, t_kill + 0.01 + k * 0.001,
                 ["", "=" * 83, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", *body, "=" * 83])
        r1 = blocks[0][1]
        if job.end[r1][1] == "signal":
            job.label["first_named"] = (r1, job.host_of(r1))
        return
    cut(job, t_notice, 9)
    _say(job, t_notice, [
        f"[mpiexec@{head}] HYDT_bscu_wait_for_completion (tools/bootstrap/utils/bscu_wait.c:76): one of the "
        "processes terminated badly; aborting",
        f"[mpiexec@{head}] HYDT_bsci_wait_for_completion (tools/bootstrap/src/bsci_wait.c:23): launcher returned "
        "error waiting for completion",
        f"[mpiexec@{head}] HYD_pmci_wait_for_completion (pm/pmiserv/pmiserv_pmci.c:218): launcher returned error "
        "waiting for completion",
        f"[mpiexec@{head}] main (ui/mpich/mpiexec.c:340): process manager error waiting for completion"])


def prrte(job: Job) -> None:
    head = job.hosts[0].name
    nspace = f"prterun-{head}-{job.label['launcher_pid']}"
    first = job.first_end()
    lost = sorted(job.vanished)
    t_lost = job.tf + job.rng.uniform(3, 40) if lost else float("inf")
    if lost and (not first or t_lost < first[0]):
        h = job.host_of(lost[0])
        line = f"Remote daemon: [{nspace}@0,{h}] on node {job.hosts[h].name}"
        _say(job, t_lost, [DASH, "PRTE has lost communication with a remote daemon.", "",
                           f"  HNP daemon   : [{nspace}@0,0] on node {head}", f"  {line}", "",
                           "This is usually due to either a failure of the TCP network",
                           "connection to the node, or possibly an internal failure of", "the daemon itself.", "",
                           "Any processes that were running on that node have been lost.",
                           "A job that loses a process is terminated unless it asked to",
                           "survive that - see the \"recoverable\" and \"continuous\" runtime",
                           "options, for example \"--rtos recoverable\".", DASH])
        job.label["launcher_line"] = line
        cut(job, t_lost + 0.2, 9)
        return
    if not first:
        return
    t, r1 = first
    _, how, n = job.end[r1]
    host = job.hosts[job.host_of(r1)].name
    if how == "signal":
        body = [f"prterun noticed that process rank {r1} with PID {job.pids[r1]} on node {host} exited on",
                f"signal {n} ({SIG.get(n, 'Unknown signal')})."]
        job.label["first_named"] = (r1, job.host_of(r1))
    else:
        body = ["prterun detected that one or more processes exited with non-zero status,",
                "thus causing the job to be terminated. The first process to do so was:", "",
                f"   Process name: [{nspace}@1,{r1}]", f"   Exit code:    {n}"]
        job.label["first_named"] = (r1, None)
    cut(job, t + job.rng.uniform(0.02, 0.5), 9)
    _say(job, t + 0.6, [DASH, *body, DASH])


def _ranges(ranks: list[int]) -> str:
    ranks = sorted(ranks)
    out: list[str] = []
    start = ranks[0]
    for a, b in zip(ranks, [*ranks[1:], -1], strict=True):
        if b != a + 1:
            out.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return ",".join(out)


def _status(how: str, n: int) -> str:
    return f"Exited with exit code {n}" if how == "exit" else SIG.get(n, f"Signal {n}")


def _report_exits(job: Job, until: float) -> None:
    """srun reports tasks as they end, grouping a host's tasks that end together with the same status."""
    groups: dict[tuple[int, str, int, int], list[int]] = {}
    for r, (t, how, n) in job.end.items():
        if t <= until and r not in job.vanished:
            groups.setdefault((job.host_of(r), how, n, int(t)), []).append(r)
    for (h, how, n, _sec), ranks in sorted(groups.items(), key=lambda kv: min(job.end[r][0] for r in kv[1])):
        t = min(job.end[r][0] for r in ranks) + 0.05
        word = "task" if len(ranks) == 1 else "tasks"
        _say(job, t, [f"srun: error: {job.hosts[h].name}: {word} {_ranges(ranks)}: {_status(how, n)}"])


def _cancel(job: Job, t: float, why: str) -> None:
    stamp = slurm_time(local(job.hosts[0], t))
    tail = f" DUE TO {why}" if why else ""
    if why:
        _say(job, t, [f"slurmstepd: error: *** JOB {job.jid} ON {job.hosts[0].name} CANCELLED AT {stamp}{tail} "
                      "***"])
    _say(job, t + 0.01, ["srun: Job step aborted: Waiting up to 32 seconds for job step to finish."])
    for h in job.hosts:
        _say(job, t + 0.02, [f"slurmstepd: error: *** STEP {job.jid}.0 ON {h.name} CANCELLED AT "
                             f"{slurm_time(local(h, t))}{tail} ***"])


def srun(job: Job) -> None:
    if job.kind == "walltime":
        _cancel(job, job.tf, "TIME LIMIT")
        cut(job, job.tf + 0.05, 15)
        _report_exits(job, float("inf"))
        return
    first = job.first_end()
    if job.kill_on_bad_exit and first:
        t_kill = first[0] + job.rng.uniform(0.05, 0.8)
        _report_exits(job, t_kill)
        _say(job, t_kill, [f"srun: Terminating StepId={job.jid}.0"])
        _cancel(job, t_kill + 0.01, "")
        cut(job, t_kill + 0.05, 15)
        _report_exits_after(job, t_kill)
        r1 = first[1]
        job.label["first_named"] = (r1, job.host_of(r1))
        return
    if job.kind == "pyxis_fail":
        _report_exits(job, float("inf"))
        t_lim = job.t0 + job.label["limit_s"]
        _cancel(job, t_lim, "TIME LIMIT")
        cut(job, t_lim + 0.05, 15)
        _report_exits_after(job, t_lim)
        return
    if job.vanished:
        h = job.host_of(min(job.vanished))
        t_nf = job.tf + job.rng.uniform(300, 330)  # SlurmdTimeout
        _report_exits(job, t_nf)
        line = f"srun: error: Node failure on {job.hosts[h].name}"
        _say(job, t_nf, [line])
        job.label["launcher_line"] = line
        _cancel(job, t_nf + 0.1, "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS")
        cut(job, t_nf + 0.2, 9)
        return
    _report_exits(job, float("inf"))
    if first:
        job.label["first_named"] = (first[1], job.host_of(first[1]))


def _report_exits_after(job: Job, t_kill: float) -> None:
    late = {r: e for r, e in job.end.items() if e[0] > t_kill}
    saved = job.end
    job.end = late
    _report_exits(job, float("inf"))
    job.end = saved


FINISH = {"flux": flux, "pbs_hydra": hydra, "prterun_efa": prrte, "pyxis_slurm": srun}
