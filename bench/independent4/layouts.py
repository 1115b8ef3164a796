"""One writer per launcher: where each channel's lines land, and what the launcher adds around them."""

from __future__ import annotations

from pathlib import Path

from . import launchers as L
from .clocks import dmesg_t, journal_iso, pylog, rfc3339nano, wall
from .nccl_torch import Rec, py
from .render import fmt, lines_of, visible
from .story import Job

LAYOUTS = ("slurm_tasks", "ray_train", "mpirun_horovod", "kubeflow", "jax_slurm")


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(x + "\n" for x in lines))


def _kernel(job: Job, out: Path, sub: str, name_of, style: str) -> None:
    """Kernel ring buffers as collected after the job: `dmesg -T` or `journalctl -k -o short-iso` per host."""
    if not job.kernel_logs:
        return
    for h, host in enumerate(job.hosts):
        def frame(t: float, line: str, host=host) -> str:
            w = wall(job.epoch, host, t)
            return f"{dmesg_t(w)} {line}" if style == "dmesg" else f"{journal_iso(w)} {host.name} kernel: {line}"

        rows = [(t, frame(t, line)) for t, _ev, line in
                lines_of(job, [e for e in visible(job) if e.chan == "kern" and e.host == h])]
        head = [frame(-3600 * 30, "Linux version 6.5.0-1024-nvidia (buildd@lcy02-amd64-089) (x86_64-linux-gnu-gcc-12)"),
                frame(-600, "nvidia-peermem: module verification failed: signature and/or required key missing - "
                            "tainting kernel")]  # boot noise every GPU node prints
        _write(out / sub / f"{name_of(h)}{'.txt' if style == 'dmesg' else '.log'}", head + [x for _, x in sorted(rows)])


def _per_rank_file(job: Job, r: int) -> list[str]:
    evs = [e for e in visible(job) if e.rank == r and e.chan in ("out", "err")]
    return [x for _, _, x in sorted(lines_of(job, evs), key=lambda z: z[0])]


def _delivered(job: Job, evs: list, most: float) -> list[tuple[float, object, str]]:
    """Lines as a forwarding launcher hands them on: each process's own lines in order, delayed by up to `most`
    seconds per write, so different processes' lines (and tracebacks) interleave out of true order."""
    last: dict[object, float] = {}
    out = []
    for ev in sorted(evs, key=lambda e: e.t):
        lag = job.rng.uniform(0, most)
        for t, e, line in lines_of(job, [ev]):
            at = max(t + lag, last.get(ev.rank, -1e9) + 1e-6)
            last[ev.rank] = at
            out.append((at, e, line))
    return out


def _launch_lines(job: Job) -> list[tuple[float, str]]:
    return [(t, x) for t, _, x in lines_of(job, [e for e in visible(job) if e.chan == "launch"])]


# --- Slurm, one task per GPU, one file per task (sbatch + srun --output=logs/%x-%j-%t.out) ---------------------------

def slurm_tasks(job: Job, out: Path) -> None:
    # SchedMD/slurm src/common/fname.c: %x job name, %j job id, %t task id (= the global rank under srun)
    script = ["#!/bin/bash", f"#SBATCH --job-name={job.name}", f"#SBATCH --nodes={len(job.hosts)}",
              f"#SBATCH --ntasks-per-node={job.ppn}", f"#SBATCH --gpus-per-node={job.ppn}", "",
              "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)",
              f"export NCCL_DEBUG={'INFO' if job.nccl_info else 'WARN' if job.nccl_warn else ''}".rstrip("="),
              f"srun {'--kill-on-bad-exit=1 ' if job.kill_on_bad_exit else ''}--output=logs/%x-%j-%t.out "
              "python train.py --config cfg.yaml"]
    _write(out / "job.sbatch", script)
    for r in range(job.world):
        _write(out / "logs" / f"{job.name}-{job.jobid}-{r}.out", _per_rank_file(job, r))
    _write(out / f"slurm-{job.jobid}.out", [x for _, x in sorted(_launch_lines(job))])
    ras = [e for e in visible(job) if e.chan == "ras"]
    for e in ras:
        stamp = f"{wall(job.epoch, job.hosts[0], e.t):%H%M%S}"
        _write(out / f"ncclras-{stamp}.txt", [x for _, _, x in lines_of(job, [e])])
    _kernel(job, out, "journal", lambda h: job.hosts[h].name, "journal")


# --- JAX multi-host under srun, one process per host, files per node (%N) -----------------------------------------

def jax_setup(job: Job) -> None:
    coord = f"{job.hosts[0].name}:{job.rng.choice((1234, 8476, 6666))}"
    job.add(0.8, 0, 0, "err", [Rec("absl", "I", "distributed.py:149", f"Starting JAX distributed service on [::]:"
                                   f"{coord.split(':')[1]}")])
    for r in range(job.world):
        job.say(1.0 + job.rng.uniform(0, 2), r, [Rec("absl", "I", "distributed.py:172", L.jax_connecting(coord))])
        job.say(6.0 + job.rng.uniform(0, 2), r, [Rec("absl", "I", "train.py:88",
                                                    f"JAX process: {r} / {job.world}, local devices: 8")])


def jax_slurm(job: Job, out: Path) -> None:
    script = ["#!/bin/bash", f"#SBATCH --job-name={job.name}", f"#SBATCH --nodes={len(job.hosts)}",
              "#SBATCH --ntasks-per-node=1", "#SBATCH --gpus-per-node=8",
              f"srun {'--kill-on-bad-exit=1 ' if job.kill_on_bad_exit else ''}--output=logs/%x-%j-%N.out "
              "python -u train.py"]
    _write(out / "job.sbatch", script)
    for r in range(job.world):
        _write(out / "logs" / f"{job.name}-{job.jobid}-{job.hosts[job.host_of[r]].name}.out", _per_rank_file(job, r))
    _write(out / f"slurm-{job.jobid}.out", [x for _, x in sorted(_launch_lines(job))])
    _kernel(job, out, "dmesg", lambda h: job.hosts[h].name, "dmesg")


# --- Horovod under mpirun --tag-output, one console --------------------------------------------------------------

def mpirun_horovod(job: Job, out: Path) -> None:
    by_node = job.world > 1 and job.host_of[1] != job.host_of[0]
    _write(out / "hostfile", [f"{h.name} slots={job.ppn}" for h in job.hosts])
    rows = []
    for t, ev, line in _delivered(job, [e for e in visible(job) if e.chan in ("out", "err")], 0.6):
        # the orted daemons forward each rank's lines; across ranks they arrive in no promised order
        rows.append((t, f"{L.mpi_tag(ev.rank, 'stdout' if ev.chan == 'out' else 'stderr')}{line}"))
    rows += _launch_lines(job)
    cmd = (f"$ mpirun -np {job.world} --hostfile hostfile {'--map-by node ' if by_node else ''}--tag-output "
           f"-bind-to none -x NCCL_DEBUG{'=INFO' if job.nccl_info else '=WARN' if job.nccl_warn else ''} "
           "-x LD_LIBRARY_PATH -mca pml ob1 -mca btl ^openib python train_hvd.py")
    _write(out / "mpirun.log", [cmd] + [x for _, x in sorted(rows, key=lambda z: z[0])])
    _kernel(job, out, "dmesg", lambda h: job.hosts[h].name, "dmesg")


# --- Ray Train (TorchTrainer), the driver's console --------------------------------------------------------------

def ray_setup(job: Job) -> None:
    rng = job.rng
    job.label["ray_node_ids"] = {h: f"{rng.getrandbits(224):056x}" for h in range(len(job.hosts))}
    job.label["ray_ns"] = f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-" \
                          f"8{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
    rows = [(job.label["ray_node_ids"][job.host_of[r]], job.hosts[job.host_of[r]].ip, job.pid_of[r], r,
             job.local_of[r], sorted(set(job.host_of), key=job.host_of.index).index(job.host_of[r]))
            for r in range(job.world)]
    job.label["trainer"] = rng.randint(2000, 9000)
    job.add(3.0, None, 0, "launch", [Rec("trainer", "", "", x) for x in L.ray_started(rows)])
    for r in range(job.world):
        job.say(2.0 + rng.uniform(0, 0.8), r, py(f"Setting up process group for: env:// [rank={r}, "
                                                 f"world_size={job.world}]"))  # ray/train/torch/config.py


def ray_train(job: Job, out: Path) -> None:
    head = 0  # the driver runs on the head node: its own workers' lines carry no ip=
    rows = []
    # the log monitor ships each worker's lines in batches, late and out of order across workers
    for t, ev, line in _delivered(job, [e for e in visible(job) if e.chan in ("out", "err")], 1.5):
        ip = None if job.host_of[ev.rank] == head else job.hosts[job.host_of[ev.rank]].ip
        rows.append((t, f"{L.ray_prefix('RayTrainWorker', job.pid_of[ev.rank], ip)} {line}"))
    for ev in [e for e in visible(job) if e.chan == "launch"]:
        for rec in ev.recs:
            if rec.style == "trainer":
                rows.append((ev.t, f"{L.ray_prefix('TorchTrainer', job.label['trainer'], None)} {rec.msg}"))
            else:
                rows += [(ev.t + k * 0.0001, x) for k, x in enumerate(fmt(job, ev, rec, ev.t))]
    hdr = [f"{pylog(wall(job.epoch, job.hosts[head], -2))}\tINFO worker.py:1841 -- Connecting to existing Ray cluster "
           f"at address: {job.hosts[head].ip}:6379...",
           "View detailed results here: /home/ray/ray_results/TorchTrainer_"
           f"{wall(job.epoch, job.hosts[head], 0):%Y-%m-%d_%H-%M-%S}", "Training started without custom configuration."]
    _write(out / "driver.log", hdr + [x for _, x in sorted(rows, key=lambda z: z[0])])
    _kernel(job, out, "kernel", lambda h: job.hosts[h].ip, "journal")


# --- Kubeflow PyTorchJob: torchrun in each pod, `kubectl logs` per pod ---------------------------------------------

def kubeflow_setup(job: Job) -> None:
    for h, host in enumerate(job.hosts):
        host.name = f"{job.name}-master-0" if h == 0 else f"{job.name}-worker-{h - 1}"
    job.label["agent_pid"] = job.rng.randint(1, 40)
    job.kernel_logs = False  # kubectl logs reach the pods, not the nodes' kernels


def _age(secs: float) -> str:
    return f"{int(secs // 3600)}h{int(secs % 3600 // 60)}m" if secs >= 3600 else f"{max(1, int(secs // 60))}m"


def kubeflow(job: Job, out: Path) -> None:
    stamps = job.rng.random() < 0.5  # kubectl logs --timestamps
    for h, host in enumerate(job.hosts):
        evs = [e for e in visible(job) if e.host == h and e.chan in ("out", "err", "launch")]
        rows = sorted(lines_of(job, evs), key=lambda z: z[0])
        text = [(f"{rfc3339nano(wall(job.epoch, host, t))} " if stamps else "") + x for t, _, x in rows]
        _write(out / "pods" / f"{host.name}.log", text)
    ctl = "pytorchjob-controller"
    events = [("Normal", "SuccessfulCreatePod", ctl, f"Created pod: {h.name}") for h in job.hosts]
    events += [("Normal", "SuccessfulCreateService", ctl, f"Created service: {job.hosts[0].name}")]
    if "k8s_killing" in job.label:  # kubelet's event when it stops a container (pkg/kubelet/kuberuntime)
        events += [("Normal", "Killing", "kubelet", f"Stopping container pytorch (pod {h.name})") for h in job.hosts]
    if "k8s_failed" in job.label:  # kubeflow/training-operator: the JobFailed event
        events.append(("Normal", "PyTorchJobFailed", ctl, job.label["k8s_failed"][1]))
    desc = [f"Name:         {job.name}", "Namespace:    training", "API Version:  kubeflow.org/v1",
            "Kind:         PyTorchJob", "Spec:", "  Pytorch Replica Specs:", "    Master:", "      Replicas:  1",
            "      Restart Policy:  Never", "    Worker:", f"      Replicas:  {len(job.hosts) - 1}", "Events:",
            "  Type    Reason                   Age   From                   Message",
            "  ----    ------                   ----  ----                   -------"]
    end = max(e.t for e in job.events) + 240  # `kubectl describe` run a few minutes after the end: ages count back
    ages = [end] * (len(job.hosts) + 1) + [end - job.label.get("k8s_killing", 0)] * ("k8s_killing" in job.label) * \
        len(job.hosts) + [end - job.label["k8s_failed"][0]] * ("k8s_failed" in job.label)
    desc += [f"  {a:<7} {b:<24} {_age(x):<5} {src:<22} {c}" for x, (a, b, src, c) in zip(ages, events, strict=True)]
    _write(out / "describe-pytorchjob.txt", desc)
    h = job.label.get("k8s_oomkilled")
    if h is not None:  # kubectl describe pod: the container's last state
        td = job.dead_hosts[h]
        pod = job.hosts[h]
        _write(out / "pods" / f"{pod.name}.describe.txt", [
            f"Name:             {pod.name}", "Namespace:        training", f"IP:               {pod.ip}",
            "Containers:", "  pytorch:", "    State:          Terminated", "      Reason:       OOMKilled",
            "      Exit Code:    137", f"      Started:      {wall(job.epoch, pod, 0):%a, %d %b %Y %H:%M:%S} +0000",
            f"      Finished:     {wall(job.epoch, pod, td):%a, %d %b %Y %H:%M:%S} +0000", "    Ready:          False",
            "    Limits:", "      memory:          640Gi", "      nvidia.com/gpu:  8"])
