"""How torchx-on-Volcano, `accelerate launch` under srun, and vLLM's executor end a job (launchers.py has
DeepSpeed and mpirun, and the torchrun agent both torchx and accelerate run)."""

from __future__ import annotations

from .clocks import slurm
from .launchers import _first_bad, _kill, agent_fail, agent_sigterm
from .story import Job

# --- torchx dist.ddp on Kubernetes with Volcano (torchx/schedulers/kubernetes_scheduler.py: a Volcano Job with
# one task per replica, policies PodEvicted/PodFailed -> AbortJob; kubelet's `Killing` events) ----------------

def end_torchx_lightning(job: Job) -> None:
    pods = job.extra["pods"]
    t_abort = None
    if job.kind == "preempt":
        t_abort = job.extra["t_fault"]
        victim = pods[job.rng.randrange(len(pods))]
        job.extra["events"].append((t_abort, "Warning", "Preempted", f"pod/{victim}",
                                    "Preempted in order to admit critical pod"))  # kube-scheduler preemption
        job.evidence = "Preempted in order to admit critical pod"
    firsts = [(f[0], h) for h in range(len(job.hosts)) if (f := _first_bad(job, job.ranks_on(h))) is not None]
    if firsts and (t_abort is None or min(firsts)[0] < t_abort):
        t, h = min(firsts)  # the first failed pod triggers the job policy; the rest are killed
        t_exit = agent_fail(job, h, t + 0.1, h)
        job.extra["events"].append((t_exit, "Warning", "Failed", f"pod/{pods[h]}",
                                    "Error: container trainer exited with code 1"))
        t_abort = t_exit
    if t_abort is None:
        return
    job.extra["events"].append((t_abort + 0.4, "Normal", "ExecuteAction", f"job/{job.extra['app_id']}",
                                "Start to execute action AbortJob "))
    for h in range(len(job.hosts)):
        t = t_abort + job.rng.uniform(0.8, 2.5)
        if any(job.alive_at(r, t) for r in job.ranks_on(h)):
            job.extra["events"].append((t, "Normal", "Killing", f"pod/{pods[h]}", "Stopping container trainer"))
            agent_sigterm(job, h, t + 0.05)


# --- `srun --label accelerate launch ...` (accelerate/commands/launch.py multi_gpu_launcher -> torch elastic) --
# srun's messages: src/srun/srun_job.c / step_launch.c (`srun: error: %s: task %d: Exited with exit code %d`,
# `Job step aborted`), slurmstepd req.c (`*** STEP %u.%u ON %s CANCELLED AT %s [DUE TO ...] ***`).

def _srun(job: Job, t: float, text: str) -> None:
    job.note("launcher", 0, t, [f"srun: {text}"])


def _stepd(job: Job, h: int, t: float, why: str) -> None:
    jid = job.extra["jobid"]
    tail = f" DUE TO {why}" if why else ""
    job.note("stepd", h, t, [f"slurmstepd: error: *** STEP {jid}.0 ON {job.hosts[h].name} CANCELLED AT "
                             f"{slurm(t, job.hosts[h])}{tail} ***"])


def end_accelerate_srun(job: Job) -> None:
    kill_on_bad = bool(job.extra["kill_on_bad_exit"])
    nodes = range(len(job.hosts))
    if job.kind == "preempt":
        t = job.extra["t_fault"]
        for h in nodes:
            _stepd(job, h, t + job.rng.uniform(0, 0.3), "PREEMPTION")
            agent_sigterm(job, h, t + 0.4)
        job.evidence = "DUE TO PREEMPTION ***"
        _srun(job, t + 0.6, "Job step aborted: Waiting up to 32 seconds for job step to finish.")
        for h in nodes:
            _srun(job, t + 1.5, f"error: {job.hosts[h].name}: task {h}: Terminated")
        return
    done: set[int] = set()
    t_lost = None
    for h, t in job.host_dead.items():
        t_lost = t + job.rng.uniform(300, 330)  # slurmctld's SlurmdTimeout before the node is marked DOWN
        job.evidence = f"error: Node failure on {job.hosts[h].name}"
    while True:
        pending = []
        for h in nodes:
            if h in done or h in job.host_dead:
                continue
            first = _first_bad(job, job.ranks_on(h))
            if first is not None:
                pending.append((first[0], h))
        if not pending:
            break
        t, h = min(pending)
        if t_lost is not None and t > t_lost:
            break
        done.add(h)
        t_exit = agent_fail(job, h, t + 0.1, h)
        _srun(job, t_exit + 0.2, f"error: {job.hosts[h].name}: task {h}: Exited with exit code 1")
        if kill_on_bad:
            _srun(job, t_exit + 0.3, "Job step aborted: Waiting up to 32 seconds for job step to finish.")
            for o in nodes:
                if o not in done and o not in job.host_dead:
                    _stepd(job, o, t_exit + 0.4, "")
                    agent_sigterm(job, o, t_exit + 0.5)
                    _srun(job, t_exit + 1.2, f"error: {job.hosts[o].name}: task {o}: Terminated")
                    done.add(o)
    if t_lost is not None:
        h = next(iter(job.host_dead))
        _srun(job, t_lost, f"error: Node failure on {job.hosts[h].name}")
        for o in nodes:
            if o not in job.host_dead:
                _stepd(job, o, t_lost + 0.2, "NODE FAILURE")
                agent_sigterm(job, o, t_lost + 0.3)
        _srun(job, t_lost + 0.5, "Job step aborted: Waiting up to 32 seconds for job step to finish.")


# --- vLLM V1 (vllm/v1/executor/multiproc_executor.py worker monitor / worker_busy_loop; v1/engine/core.py;
# v1/engine/exceptions.py EngineDeadError; ray/exceptions.py ActorDiedError for the Ray executor) ------------

def _engine(job: Job, t: float, level: str, where: str, text: str) -> None:
    job.note("engine", 0, t, [text], style=f"app|vllm|{level}|{where}")


def end_vllm_serve(job: Job) -> None:
    ray = len(job.hosts) > 1
    first = _first_bad(job, list(range(job.world)))
    tf = float(job.extra["t_fault"])
    if job.kind == "xid119" and first is not None:
        for k in range(1, 3):
            if tf + 60 * k < first[0]:
                _engine(job, tf + 60 * k, "WARNING", "shm_broadcast.py:466", "No available shared memory broadcast "
                        "block found in 60 seconds. This typically happens when some processes are hanging or doing "
                        "some time-consuming work (e.g. compilation, weight/kv cache quantization).")
    for h, t in job.host_dead.items():
        ip = job.hosts[h].ip
        _engine(job, t + job.rng.uniform(25, 35), "WARNING", "worker.py:2471",
                f"The node with node id: 5e3a{h:02d}c1f9d04b7a8e2 and address: {ip} and node name: {ip} has been "
                "marked dead because the detector has missed too many heartbeats from it. This can happen when a "
                "\t(1) raylet crashes unexpectedly (OOM, etc.) \n\t(2) raylet has lagging heartbeats due to slow "
                "network or busy workload.")
        job.evidence = f"address: {ip} and node name: {ip} has been marked dead"
    if first is None:
        return
    t, r = first
    code = job.ends[r][1]
    if code == 1:
        _restyle_exception(job, r)
        _engine(job, t + 0.2, "ERROR", "core.py:400", "EngineCore encountered a fatal error.")
        _engine(job, t + 0.21, "ERROR", "core.py:400", f"RuntimeError: Worker failed with error "
                f"'{job.extra.get('worker_error', 'see above')}', please check the stack trace above for the root "
                "cause")
    elif ray:
        _engine(job, t + 0.5, "ERROR", "ray_distributed_executor.py:212", "ray.exceptions.ActorDiedError: The "
                f"actor died unexpectedly before finishing this task.\n\tclass_name: RayWorkerWrapper\n\tpid: "
                f"{job.pids[r]}\n\tip: {job.host_of(r).ip}\nThe actor is dead because its worker process has died. "
                "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection "
                "error code 2. End of file.")
    else:
        _engine(job, t + 0.5, "ERROR", "multiproc_executor.py:140", f"Worker proc VllmWorker-{r} died "
                "unexpectedly, shutting down executor.")
    _kill(job, list(range(job.world)), t + 0.8)
    _engine(job, t + 0.9, "ERROR", "async_llm.py:399", "AsyncLLM output_handler failed.")
    _engine(job, t + 0.91, "ERROR", "async_llm.py:399", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
            "encountered an issue. See stack trace (above) for the root cause.")
    job.note("engine", 0, t + 1.2, ["INFO:     Shutting down", "INFO:     Application shutdown complete.",
                                    f"INFO:     Finished server process [{job.agent_pids[0]}]"], style="out")


def _restyle_exception(job: Job, r: int) -> None:
    """A worker's exception goes through logger.exception in worker_busy_loop: `WorkerProc hit an exception.`
    then the traceback, every line carrying the ERROR prefix of the same record."""
    mine = [e for e in job.events if e.rank == r and e.style == "err" and e.t >= job.ends[r][0] - 5]
    if not mine:
        return
    for e in mine:
        e.style = "app|vllm|ERROR|multiproc_executor.py:596"
    head = mine[0]
    from .story import Ev
    job.events.append(Ev(head.t - 1e-6, head.host, r, "rank", head.style, "WorkerProc hit an exception."))
    job.extra["worker_error"] = mine[-1].text.split(": ", 1)[-1][:80] if mine else "see above"
