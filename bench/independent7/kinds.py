"""Failure kinds: each plays its cause into a `Job` and says what a label may name.

KINDS maps a kind to (failure_class, level); level is "rank", "host" or "job". Classes are
../shared/corpus/class_map.json's, except the three in class_map_additions.json; a few depend on the launcher
(`job_class`)."""

from __future__ import annotations

from . import kernel, texts
from .story import Job, Out, aftermath

KINDS: dict[str, tuple[str, str]] = {
    "gpu_lost": ("xid_79", "rank"),
    "ecc": ("gpu_uncorrectable_ecc", "rank"),
    "switch_fatal": ("nvswitch_fatal_error", "host"),
    "mem_kill": ("rank_process_killed_sigkill_host_oom", "rank"),
    "gpu_mem": ("cuda_oom", "rank"),
    "crash": ("rank_segfault_sigsegv", "rank"),
    "silent": ("nccl_watchdog_timeout_straggler_rank", "rank"),
    "host_down": ("node_loss_peer_processes_killed", "host"),
    "walltime": ("job_walltime_exceeded", "job"),
    "pyxis_fail": ("container_start_failed", "host"),
}


def job_class(kind: str, layout: str) -> str:
    if layout == "pyxis_slurm" and kind == "host_down":
        return "slurm_node_failure"
    if layout == "pyxis_slurm" and kind == "walltime":
        return "slurm_time_limit"
    return KINDS[kind][0]


def _comm(job: Job) -> str:
    return job.rng.choice(("python3", "pt_main_thread", "python"))


def _kern(job: Job, h: int, t: float, lines: list[str]) -> None:
    for i, x in enumerate(lines):
        job.kern.setdefault(h, []).append((t + i * 2e-5, x))


def _cuda_fail(job: Job, r: int, t: float, text: str) -> None:
    """The rank meets a CUDA error: in its step (traceback, exit 1) or in the watchdog (abort)."""
    if job.rng.random() < 0.55:
        job.say(r, t, texts.cuda_error_traceback(text, job.label["script"]))
        job.end[r] = (t + job.rng.uniform(0.2, 1.5), "exit", 1)
    else:
        job.say(r, t, texts.cuda_error_watchdog(job.new_torch, r, job.tl(r, t), text))
        job.end[r] = (t + job.rng.uniform(0.05, 0.4), "signal", 6)


def _rank_label(job: Job, r: int, evidence: str, clue: str) -> None:
    job.label.update(rank=r, host=job.host_of(r), evidence=evidence, clues=[clue])


def gpu_lost(job: Job) -> None:
    r = job.rng.randrange(job.world)
    h = job.host_of(r)
    lines = kernel.xid79(job.hosts[h].buses[job.local_of(r)])
    _kern(job, h, job.tf, lines)
    _cuda_fail(job, r, job.tf + job.rng.uniform(0.3, 4), "unspecified launch failure")
    _rank_label(job, r, lines[1], "the rank's own CUDA error line carries its launcher prefix")
    aftermath(job, job.tf)


def ecc(job: Job) -> None:
    r = job.rng.randrange(job.world)
    h = job.host_of(r)
    lines = kernel.xid_ecc(job.rng, job.hosts[h].buses[job.local_of(r)], job.pids[r], _comm(job))
    _kern(job, h, job.tf, lines)
    _cuda_fail(job, r, job.tf + job.rng.uniform(0.05, 2), "uncorrectable ECC error encountered")
    _rank_label(job, r, lines[0], "the Xid names the rank's pid; its CUDA error line carries its prefix")
    aftermath(job, job.tf)


def switch_fatal(job: Job) -> None:
    h = job.rng.randrange(len(job.hosts))
    lines, cause, key = kernel.sxid_fatal(job.rng)
    _kern(job, h, job.tf, lines)
    job.fm.setdefault(h, []).extend((job.tf + 0.4 + i * 1e-3, x) for i, x in
                                    enumerate(kernel.fabric_manager(key, job.rng.randint(2000, 9000))))
    for r in job.ranks_on(h):
        _cuda_fail(job, r, job.tf + job.rng.uniform(0.2, 2.5), "uncorrectable NVLink error detected during the "
                   "execution")
    job.label.update(rank=None, host=h, evidence=cause, clues=["every rank of one host fails on NVLink at once"])
    aftermath(job, job.tf)


def mem_kill(job: Job) -> None:
    r = job.rng.randrange(job.world)
    h = job.host_of(r)
    comm = _comm(job)
    lines = kernel.oom_kill(job.rng, job.pids[r], comm, f"/system.slice/slurmstepd.scope/job_{job.jid}")
    _kern(job, h, job.tf, lines)
    job.end[r] = (job.tf + 0.002, "signal", 9)
    job.label.update(rank=r, host=h, evidence=lines[2].split(" total-vm")[0], clues=[])
    job.label["oom_host"] = h
    aftermath(job, job.tf)


def gpu_mem(job: Job) -> None:
    r = job.rng.randrange(job.world)
    gib = job.rng.choice((1.0, 2.0, 3.5, 7.81, 11.25))
    lines = texts.cuda_oom(gib, job.local_of(r), job.rng.choice((79.1, 79.19, 139.72)), job.label["script"])
    job.say(r, job.tf, lines)
    job.end[r] = (job.tf + job.rng.uniform(0.3, 2), "exit", 1)
    _rank_label(job, r, lines[-1][:90], "the rank's own traceback carries its launcher prefix")
    aftermath(job, job.tf)


def crash(job: Job) -> None:
    r = job.rng.randrange(job.world)
    h = job.host_of(r)
    seg = kernel.segfault(job.rng, job.pids[r], _comm(job))
    _kern(job, h, job.tf + 0.001, [seg])
    if job.rng.random() < 0.7:
        job.say(r, job.tf, texts.faulthandler_segv(job.label["script"]))
        clue = "faulthandler's block carries the rank's launcher prefix"
    else:
        clue = ""  # only the launcher's report (if it names the first death) or the kernel pid
    job.end[r] = (job.tf + 0.003, "signal", 11)
    job.label.update(rank=r, host=h, evidence=seg.split(" ip ")[0], clues=[clue] if clue else [])
    aftermath(job, job.tf)


def silent(job: Job) -> None:
    r = job.rng.randrange(job.world)
    job.hung[r] = job.tf
    job.label.update(rank=r, host=job.host_of(r), clues=[],
                     evidence=f"Last enqueued NCCL work: {job.seq - 1}, last completed NCCL work: {job.seq - 2}.")
    aftermath(job, job.tf + job.rng.uniform(0.05, 0.8))


def host_down(job: Job) -> None:
    h = job.rng.randrange(len(job.hosts))
    for r in job.ranks_on(h):
        job.vanished[r] = job.tf
        job.lines[r] = [o for o in job.lines.get(r, []) if o.t < job.tf]
    job.kern[h] = [(t, x) for t, x in job.kern.get(h, []) if t < job.tf]
    job.label.update(rank=None, host=h, evidence="", clues=[])
    aftermath(job, job.tf)


def walltime(job: Job) -> None:
    job.label.update(rank=None, host=None, evidence="", clues=[])


def pyxis_fail(job: Job) -> None:
    """One node's container runtime cannot start the image: that node's tasks never run."""
    h = job.rng.randrange(len(job.hosts))
    t = job.t0 + job.rng.uniform(20, 90)
    why = job.rng.choice((
        ["nvidia-container-cli: initialization error: nvml error: driver/library version mismatch",
         "[ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1"],
        ["enroot-nsenter: failed to create user namespace: Permission denied"],
        ["nvidia-container-cli: ldcache error: process /usr/sbin/ldconfig.real failed with error code: 1",
         "[ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return code 1"]))
    cause = "slurmstepd: error: pyxis: couldn't start container"
    for i, r in enumerate(job.ranks_on(h)):
        body = ["slurmstepd: error: pyxis: container start failed with error code: 1"]
        if i == 0:
            body += ["slurmstepd: error: pyxis: printing enroot log file:"] + \
                [f"slurmstepd: error: pyxis:     {x}" for x in why]
        body += [cause, "slurmstepd: error: pyxis: if the image has an unusual entrypoint, try using "
                 "--no-container-entrypoint", "slurmstepd: error: spank: required plugin spank_pyxis.so: "
                 "task_init() failed with rc=-1", "slurmstepd: error: Failed to invoke spank plugin stack"]
        job.task_lines[r] = [Out(t + i * 0.01 + k * 1e-4, x) for k, x in enumerate(body)]
        job.lines[r] = []
        job.end[r] = (t + 0.05 + i * 0.01, "exit", 1)
    job.label.update(rank=None, host=h, evidence=cause, clues=["the failing tasks' srun labels and srun's exit "
                                                                "line name one node"])
    job.label["never_started"] = h


APPLY = {"gpu_lost": gpu_lost, "ecc": ecc, "switch_fatal": switch_fatal, "mem_kill": mem_kill, "gpu_mem": gpu_mem,
         "crash": crash, "silent": silent, "host_down": host_down, "walltime": walltime, "pyxis_fail": pyxis_fail}
