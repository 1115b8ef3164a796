"""Launch layouts, part 2: Ray Train, JAX multi-host, srun without -l, Megatron under torchrun, Kubeflow pods."""

from __future__ import annotations

import re

from . import render as R
from .layouts_a import SIGTEXT, _dmesg
from .lines import traceback
from .story import Story
from .topo import Topo


def ray_train(topo: Topo, st: Story) -> dict[str, str]:
    """ray-project/ray python/ray/_private/log_monitor + worker.py print_worker_logs ('(RayTrainWorker pid=%d,
    ip=%s) ' prefixes, log deduplication '[repeated %dx across cluster]'), train/_internal/backend_executor.py
    ('Started distributed worker processes:' with world_rank/local_rank/node_rank), exceptions.py RayTaskError /
    ActorDiedError texts, train/base_trainer.py TrainingFailedError. The driver re-raises the first failed
    worker in world-rank order (ray.get over the list)."""
    bad = sorted((t, r) for r, (t, rc) in st.exits.items() if rc != 0)
    st = R.cut_all(topo, st, 3.0)
    tp = topo.pids[0] - 311
    out: list[R.Line] = [(2.0, f"(TorchTrainer pid={tp}) Started distributed worker processes: ")]
    for r in range(topo.world):
        n = topo.node(r)
        out.append((2.0 + r * 1e-4, f"(TorchTrainer pid={tp}) - (node_id={topo.job_id:x}{n:04x}e1f2a3b4, ip="
                    f"{topo.ips[n]}, pid={topo.pids[r]}) world_rank={r}, local_rank={topo.local(r)}, node_rank={n}"))
    seen: dict[str, list[float]] = {}
    first_of: dict[str, tuple[float, str]] = {}
    for t, ln in R.rank_lines(topo, st, lambda r: f"(RayTrainWorker pid={topo.pids[r]}, ip={topo.ips[topo.node(r)]}) "):
        key = re.sub(r"\d+", "N", ln.split(") ", 1)[1])
        if key in seen and t - seen[key][0] < 5.0:
            seen[key].append(t)
            continue
        seen[key] = [t]
        first_of[key] = (t, ln)
        out.append((t, ln))
    for key, ts in seen.items():
        if len(ts) > 1:
            out.append((ts[-1], f"{first_of[key][1]} [repeated {len(ts) - 1}x across cluster]"))
    out += R.sched_lines(topo, st)
    held = {ev.rank: topo.stamp(ev.text, ev.t, ev.host) for ev in reversed(st.events)
            if ev.src == "rank" and ev.text.startswith("Traceback")}
    lost = [r for r in range(topo.world) if r not in st.exits]
    order = [r for _, r in bad] if bad else lost
    if lost and bad and bad[0][0] > st.end - 1:
        order = lost
    if order:  # Ray Train's backend executor waits on the workers' futures: the first to fail is raised
        r = order[0]
        n = topo.node(r)
        t = max(st.end, st.exits.get(r, (st.end, 0))[0]) + 2
        if r in st.exits and st.exits[r][1] > 0 and r in held:
            err = (f"ray.exceptions.RayTaskError: ray::_RayTrainWorker__execute.get_next() (pid={topo.pids[r]}, "
                   f"ip={topo.ips[n]}, actor_id=3fa1c0{r:04x}, repr=<ray.train._internal.worker_group.RayTrainWorker "
                   f"object at 0x7f{r:04x}c0ffee>)\n" + held[r])
        else:
            why = ("The actor died because its node has died." if r not in st.exits else
                   "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
                   "detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some "
                   "potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory "
                   "usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or "
                   "other unexpected errors.")
            err = (f"ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n\t"
                   f"class_name: RayTrainWorker\n\tactor_id: 3fa1c0{r:04x}\n\tpid: {topo.pids[r]}\n\tnamespace: "
                   f"{topo.job_id:x}\n\tip: {topo.ips[n]}\n{why}")
        out.append((t, err))
        out.append((t + 0.1, "\nThe above exception was the direct cause of the following exception:\n"))
        out.append((t + 0.2, traceback([("/home/ray/train_ray.py", 97, "<module>", "result = trainer.fit()")],
                                       "ray.train.base_trainer.TrainingFailedError: The Ray Train run failed. Please "
                                       "inspect the previous error messages for a cause. After fixing the issue "
                                       "(assuming that the error is not caused by your own application logic, but "
                                       "rather an error such as OOM), you can restart the run from scratch or "
                                       "continue this run.")))
    return {"driver.log": R.join(out)}


def jax_multihost(topo: Topo, st: Story) -> dict[str, str]:
    """google/jax jax/_src/distributed.py initialize (absl 'Starting JAX distributed service on %s' /
    'Connecting to JAX distributed service on %s') in the absl log format of abseil-py
    absl/logging/__init__.py (L MMDD HH:MM:SS.micros thread file:line] msg); one process per host."""
    naming = topo.rng.choice(["short", "fqdn"])
    files: dict[str, str] = {}
    coord = f"{topo.ips[0]}:1234"
    for n in range(len(topo.hosts)):
        tid = topo.pids[n] % 100000

        def absl(t: float, msg: str, lvl: str = "I", n: int = n, tid: int = tid) -> R.Line:
            return (t, topo.stamp(f"{lvl}@GLOG@ {tid:6d} {msg}", t, n))

        lines = []
        if n == 0:
            lines.append(absl(1.0, f"distributed.py:90] Starting JAX distributed service on {coord}"))
        lines.append(absl(1.5, f"distributed.py:101] Connecting to JAX distributed service on {coord}"))
        lines.append(absl(3.0, "xla_bridge.py:863] Unable to initialize backend 'rocm': module 'jaxlib.xla_extension'"
                               " has no attribute 'GpuAllocatorConfig'"))
        lines += R.rank_lines(topo, st, lambda r: "", keep=R.only(n))
        if n == 0:
            t = 30.0
            step = 0
            while t < min(st.end, 20000):
                step += 100
                lines.append(absl(t, f"train.py:233] step {step}, loss {2.0 + 8.0 / (1 + step / 300):.4f}, "
                                     f"{topo.rng.uniform(40, 60):.1f} steps/s"))
                t += topo.rng.uniform(60, 400)
        name = topo.hosts[n] if naming == "short" else topo.fqdn[n]
        files[f"logs/{name}.log"] = R.join(lines)
    files.update(_dmesg(topo, st))
    return files


def _ranges(ranks: list[int]) -> str:
    parts, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ",".join(parts)


def srun_task_lines(topo: Topo, st: Story) -> list[R.Line]:
    """SchedMD/slurm src/srun/launch (_task_finish): 'srun: error: %s: task%s %s: Exited with exit code %d' or the
    signal's strsignal text, tasks exiting together grouped as 'tasks 8-15'; then 'srun: Job step aborted'."""
    out: list[R.Line] = []
    groups: dict[tuple[int, int, int], list[int]] = {}
    told = " ".join(ev.text for ev in st.events if ev.src == "sched")
    for r, (t, rc) in st.exits.items():
        if rc != 0 and f": task {r}: " not in told:
            groups.setdefault((topo.node(r), rc, int(t)), []).append(r)
    for (n, rc, sec), ranks in groups.items():
        ranks.sort()
        what = f"Exited with exit code {rc}" if rc > 0 else SIGTEXT.get(-rc, f"Signal {-rc}")
        task = f"task {ranks[0]}" if len(ranks) == 1 else f"tasks {_ranges(ranks)}"
        out.append((sec + 0.9, f"srun: error: {topo.hosts[n]}: {task}: {what}"))
    if out:
        t0 = min(t for t, _ in out)
        out.append((t0 + 0.01, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."))
    return out


def srun_plain(topo: Topo, st: Story) -> dict[str, str]:
    """sbatch script running `srun python train.py` (one task per GPU, no --label: task output unprefixed;
    SLURM_PROCID = global rank)."""
    if topo.rng.random() < 0.5:  # srun --kill-on-bad-exit (or KillOnBadExit=1 in slurm.conf)
        st = R.cut_all(topo, st, 1.0)
    out = R.rank_lines(topo, st, lambda r: "") + R.sched_lines(topo, st) + srun_task_lines(topo, st)
    files = {f"slurm-{topo.job_id}.out": R.join(out)}
    files.update(_dmesg(topo, st))
    return files


def megatron_torchrun(topo: Topo, st: Story) -> dict[str, str]:
    """NVIDIA/Megatron-LM examples: sbatch + srun one torchrun per node, each node's console in logs/%x-%j-%n.out;
    rank lines carry torch's global '[rankN]:' prefix (seen e.g. in pytorch/pytorch#152623); each node's agent
    prints the elastic table (render.elastic_table)."""
    files: dict[str, str] = {}
    st = R.cut_nodes(topo, st, 5.0)
    for n in range(len(topo.hosts)):
        lines = R.rank_lines(topo, st, lambda r: f"[rank{r}]:", keep=R.on_node(topo, n))
        lines += R.elastic_agent_lines(topo, st, n, 5.0)
        tab = R.elastic_table(topo, st, n, 5.0, "pretrain_gpt.py")
        if tab:
            lines.append((tab[0] + 1, traceback([("/usr/local/bin/torchrun", 8, "<module>", "sys.exit(main())")],
                                                tab[1])))
        files[f"logs/gpt-{topo.job_id}-{n}.out"] = R.join(lines)
    files[f"slurm-{topo.job_id}.out"] = R.join(R.sched_lines(topo, st) + [
        (t, ln) for t, ln in srun_task_lines(topo, st) if "Job step aborted" in ln])
    files.update(_dmesg(topo, st))
    return files


def kubeflow_pods(topo: Topo, st: Story) -> dict[str, str]:
    """kubeflow/training-operator PyTorchJob (master-0 = rank 0, worker-i = rank i+1, one process per pod):
    `kubectl logs` per pod, `kubectl get events` (kubelet eviction text from kubernetes
    pkg/kubelet/eviction/helpers.go; the operator's 'ExitedWithCode' and 'PyTorchJobFailed' events from
    training-operator pkg/controller.v1/common/pod.go and pytorch controller), `kubectl describe pod` excerpts."""
    job = topo.hosts[0].rsplit("-master-0", 1)[0]
    nodes = [f"gke-a3-pool-{topo.job_id % 99999:05x}-{topo.rng.choice('bcdfghjklmnpqrstvwxz')}{i:03d}"
             for i in range(topo.world)]
    files: dict[str, str] = {}
    for r in range(topo.world):
        files[f"pods/{topo.hosts[r]}.log"] = R.join(R.rank_lines(topo, st, lambda q: "", keep=R.only(r)))
    ev: list[tuple[float, str, str, str, str]] = []
    for r in range(topo.world):
        ev.append((0.5, "Normal", "Scheduled", f"pod/{topo.hosts[r]}",
                   f"Successfully assigned default/{topo.hosts[r]} to {nodes[r]}"))
        ev.append((3.0, "Normal", "Started", f"pod/{topo.hosts[r]}", "Started container pytorch"))
    for r, (reason, _code) in st.pod_state.items():
        if reason == "Evicted":
            t = st.exits[r][0]
            ev.append((t - 1, "Warning", "Evicted", f"pod/{topo.hosts[r]}", "The node was low on resource: "
                       "ephemeral-storage. Threshold quantity: 10Gi, available: 9012Mi. Container pytorch was using "
                       "51234Mi, request is 0, has larger consumption of ephemeral-storage. "))
            ev.append((t - 0.5, "Normal", "Killing", f"pod/{topo.hosts[r]}", "Stopping container pytorch"))
    failed = sorted(r for r, (_t, rc) in st.exits.items() if rc != 0)
    for r in failed:
        code = st.pod_state.get(r, ("Error", 128 - st.exits[r][1] if st.exits[r][1] < 0 else st.exits[r][1]))[1]
        ev.append((st.end + 5, "Normal", "ExitedWithCode", f"pytorchjob/{job}",
                   f"Pod: default.{topo.hosts[r]} exited with code {code}"))
    ev.append((st.end + 6, "Normal", "PyTorchJobFailed", f"pytorchjob/{job}",
               f"PyTorchJob default/{job} is failed because 1 Worker replica(s) failed."))
    end = st.end + 60
    rows = [f"{'LAST SEEN':<11} {'TYPE':<9} {'REASON':<17} {'OBJECT':<34} MESSAGE"]
    for t, typ, reason, obj, msg in sorted(ev, key=lambda e: e[0]):
        age = end - t
        rows.append(f"{(f'{int(age // 60)}m' if age >= 60 else f'{int(age)}s'):<11} {typ:<9} {reason:<17} {obj:<34} "
                    f"{msg}")
    files["events.txt"] = "\n".join(rows) + "\n"
    show = sorted(set(st.pod_state) | set(failed[:2]))
    for r in show:
        rc = st.exits.get(r, (0, 0))[1]
        reason, code = st.pod_state.get(r, ("Error", 128 - rc if rc < 0 else rc))
        top = ("Status:           Failed\nReason:           Evicted\nMessage:          The node was low on resource: "
               "ephemeral-storage. \n" if reason == "Evicted" else "Status:           Failed\n")
        files[f"describe/{topo.hosts[r]}.txt"] = (
            f"Name:             {topo.hosts[r]}\nNamespace:        default\nNode:             {nodes[r]}/"
            f"{topo.ips[r]}\n{top}IP:               {topo.ips[r]}\nContainers:\n  pytorch:\n    State:          "
            f"Terminated\n      Reason:       {'Error' if reason == 'Evicted' else reason}\n      Exit Code:    "
            f"{code}\n    Restart Count:  0\n")
    return files
