"""Write a Story as the files a cluster leaves behind, in one of five launch styles.

slurm_torchrun  `srun -l torchrun --tee 3 --log-dir ...`: one slurm-<id>.out where every line carries srun's
                '<task>: ' label (SchedMD/slurm src/common/write_labelled_message.c: _write_label, '%0*d: ' with
                the width of the largest task id), torchrun's per-rank log files, dmesg per node.
torchrun_nodes  torchrun started on each node by hand or pdsh: one console file per node, per-rank log files,
                /var/log/syslog excerpts; some jobs pass --local-ranks-filter 0, so only local rank 0 reaches the
                console.
srun_direct     `srun -l python train.py`, one task per GPU: one combined file labelled by task id (= global rank).
k8s_torchrun    Kubeflow PyTorchJob, torchrun in each pod: `kubectl logs` per pod and `kubectl describe pod`.
k8s_rank_pods   JobSet with one process per pod: `kubectl logs` per pod and `kubectl describe pod`.

torchrun's console prefix is '[<role><local_rank>]:' (torch/distributed/elastic/multiprocessing/tail_log.py:
TailLog.start, role 'default'), put in front of the worker's own text, which for libtorch's C++ lines already
starts with c10's '[rank<global>]:'.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from . import formats as F
from .story import Exit, Story
from .topology import Job, Node

SIGTEXT = {-6: "Aborted", -7: "Bus error", -9: "Killed", -11: "Segmentation fault", -15: "Terminated"}


def _write(path: str, rows: list[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("\n".join(rows) + ("\n" if rows else ""))


def _is_stdout(line: str) -> bool:
    return " NCCL INFO " in line  # NCCL writes to stdout unless NCCL_DEBUG_FILE is set


def _banner(job: Job, node: Node, t: float) -> list[tuple[float, str]]:
    # torch/distributed/run.py: config_from_args warns about OMP_NUM_THREADS when nproc_per_node > 1
    mod = "torch.distributed.run"
    text = ["", "*****************************************", "Setting OMP_NUM_THREADS environment variable for each "
            "process to be 1 in default, to avoid your system being overloaded, please further tune the variable for "
            "optimal performance in your application as needed. ", "*****************************************"]
    t += job.rng.uniform(0.5, 3)
    if job.torch_new:
        return [(t + i * 1e-4, F.agent(job, node, t, "W", mod, 793, x)) for i, x in enumerate(text)]
    return [(t, "WARNING:torch.distributed.run:")] + [(t + i * 1e-4, x) for i, x in enumerate(text[1:])]


def _rdzv(job: Job, node: Node, t: float) -> list[tuple[float, str]]:
    # torch/distributed/elastic/agent/server/api.py: SimpleElasticAgent._rendezvous (INFO, seen with LOGLEVEL=INFO)
    ranks = job.ranks_on(node)
    body = (f"[default] Rendezvous complete for workers. Result:\n  restart_count=0\n"
            f"  master_addr={job.nodes[0].fqdn}\n"
            f"  master_port=29500\n  group_rank={node.node_rank}\n  group_world_size={len(job.nodes)}\n"
            f"  local_ranks={list(range(job.nproc))}\n  role_ranks={ranks}\n  global_ranks={ranks}\n"
            f"  role_world_sizes={[job.world] * job.nproc}\n  global_world_sizes={[job.world] * job.nproc}\n")
    return [(t + i * 1e-4, F.agent(job, node, t, "I", "torch.distributed.elastic.agent.server.api", 525, x))
            for i, x in enumerate(body.rstrip("\n").split("\n"))]


def _console(s: Story, node: Node, only_local: set[int] | None) -> list[tuple[float, str]]:
    job = s.job
    rows: list[tuple[float, str]] = []
    rows += _banner(job, node, job.t0)
    if job.rng.random() < 0.4:
        rows += _rdzv(job, node, job.t0 + 1)
    for r in job.ranks_on(node):
        lr = r % job.nproc
        if only_local is not None and lr not in only_local:
            continue
        rows += [(t, f"[default{lr}]:{ln}") for t, ln in s.lines.get(r, []) if t <= s.exits[r].t]
    rows += s.agent.get(node.index, [])
    return sorted(rows, key=lambda x: x[0])


def _rank_files(s: Story, root: str, node: Node) -> None:
    job = s.job
    run = f"{job.job_id}_{job.slurm_id % 997}"
    for r in job.ranks_on(node):
        base = os.path.join(root, "torchrun_logs", node.short, f"{run}", "attempt_0", str(r % job.nproc))
        rows = sorted((x for x in s.lines.get(r, []) if x[0] <= s.exits[r].t), key=lambda x: x[0])
        _write(os.path.join(base, "stdout.log"), [ln for _, ln in rows if _is_stdout(ln)])
        _write(os.path.join(base, "stderr.log"), [ln for _, ln in rows if not _is_stdout(ln)])


def _kernel_noise(node: Node, t: float, human: bool) -> list[tuple[float, str]]:
    return [(t - 7200, F.dmesg(node, t - 7200, "nvidia-nvlink: Nvlink Core is being initialized, major device "
                                               "number 508", human)),
            (t - 3600, F.dmesg(node, t - 3600, "IPv6: ADDRCONF(NETDEV_CHANGE): ibp12s0: link becomes ready", human))]


def _kernel_files(s: Story, root: str, sub: str, syslog: bool) -> None:
    job = s.job
    for node in job.nodes:
        rows = list(s.kernel.get(node.index, []))
        if not rows and job.rng.random() < 0.7:
            continue
        rows += _kernel_noise(node, job.t0, human=bool(rows) and rows[0][1][1:2].isalpha())
        if syslog:  # re-render the same events the way rsyslog writes them
            rows = [(t, F.syslog(node, t, ln.split("] ", 1)[1])) for t, ln in rows]
        _write(os.path.join(root, sub, f"{node.short}.log"), [ln for _, ln in sorted(rows)])


def _ranges(xs: list[int]) -> str:
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def _srun_exits(job: Job, codes: dict[int, tuple[float, int]], task_of_node: bool) -> list[tuple[float, str]]:
    """src/srun/srun_job.c: _task_finish: '%s: %s %s: Exited with exit code %d' or strsignal for signals."""
    rows = []
    for node in job.nodes:
        tasks = [node.index] if task_of_node else job.ranks_on(node)
        groups: dict[int, list[int]] = {}
        for k in tasks:
            if k in codes and codes[k][1] != 0:
                groups.setdefault(codes[k][1], []).append(k)
        for code, ks in groups.items():
            what = f"Exited with exit code {code}" if code > 0 else SIGTEXT.get(code, f"signal {-code}")
            word = "task" if len(ks) == 1 else "tasks"
            rows.append((max(codes[k][0] for k in ks) + 0.5,
                         f"srun: error: {node.short}: {word} {_ranges(ks)}: {what}"))
    return rows


def _describe(s: Story, node: Node, k8s_node: str, start: float, end: float, code: int) -> list[str]:
    """kubernetes/kubectl pkg/describe/describe.go: describePod and describeContainerState."""
    job = s.job
    st = s.pods.get(node.index, {})
    fmt = "%a, %d %b %Y %H:%M:%S +0000"
    when = datetime.fromtimestamp(start, tz=UTC).strftime(fmt)
    done = datetime.fromtimestamp(end, tz=UTC).strftime(fmt)
    reason = st.get("reason", "Error" if code else "Completed")
    rows = [f"Name:             {node.short}", "Namespace:        default", "Priority:         0",
            f"Node:             {k8s_node}/10.128.{node.index // 250}.{node.index % 250 + 3}",
            f"Start Time:       {when}",
            f"Labels:           training.kubeflow.org/job-name={node.short.rsplit('-worker-', 1)[0]}",
            f"                  training.kubeflow.org/replica-index={node.index}",
            "                  training.kubeflow.org/replica-type=worker", "Status:           Failed"]
    if reason in ("Evicted", "NodeLost"):
        rows += [f"Reason:           {reason}", f"Message:          {st.get('message', 'Node is not ready')}"]
    rows += [f"IP:               {node.ip}", "Containers:", "  pytorch:",
             f"    Container ID:   containerd://{job.rng.getrandbits(128):032x}",
             "    Image:          nvcr.io/nvidia/pytorch:24.05-py3", "    State:          Terminated",
             f"      Reason:       {reason if reason not in ('Evicted', 'NodeLost') else 'Error'}",
             f"      Exit Code:    {st.get('code', code)}", f"      Started:      {when}",
             f"      Finished:     {done}", "    Ready:          False", "    Restart Count:  0", "    Limits:",
             "      memory:          480Gi", f"      nvidia.com/gpu:  {job.nproc}", "Events:",
             "  Type     Reason     Age   From               Message",
             "  ----     ------     ----  ----               -------",
             f"  Normal   Scheduled  {int((end - start) // 60) + 5}m   default-scheduler  Successfully assigned "
             f"default/{node.short} to {k8s_node}"]
    if "event" in st:
        typ, why, msg = st["event"]
        rows.append(f"  {typ:<8} {why:<10} {job.rng.randint(2, 9)}m    kubelet            {msg}")
    return rows


def write(s: Story, root: str) -> list[str]:
    """Lay the story out under root; returns the relative paths of the files written."""
    job = s.job
    rng = job.rng
    for r in range(job.world):  # ranks the story never stopped ran to the end of the log
        s.exits.setdefault(r, Exit(max(e.t for e in s.exits.values()) + 5, 0))
    style = job.style
    if style in ("slurm_torchrun", "torchrun_nodes", "k8s_torchrun"):
        only = {0} if style != "slurm_torchrun" and rng.random() < 0.35 else None
        consoles = {n.index: _console(s, n, only) for n in job.nodes}
        for n in job.nodes:
            if n.index in s.dead_nodes:  # what reached the console before the host went away
                t_dead = min(s.exits[r].t for r in job.ranks_on(n))
                consoles[n.index] = [x for x in consoles[n.index] if x[0] <= t_dead]
        if style != "k8s_torchrun":
            for n in job.nodes:
                _rank_files(s, root, n)
        if style == "slurm_torchrun":
            width = len(str(len(job.nodes) - 1))
            rows = [(t, f"{n.index:0{width}d}: {ln}") for n in job.nodes for t, ln in consoles[n.index]]
            codes = {n.index: (max(s.exits[r].t for r in job.ranks_on(n)) + 2,
                               0 if n.index in s.dead_nodes else (1 if s.agent.get(n.index) else 0))
                     for n in job.nodes}
            rows += s.sched + _srun_exits(job, codes, task_of_node=True)
            _write(os.path.join(root, f"slurm-{job.slurm_id}.out"), [ln for _, ln in sorted(rows)])
            _kernel_files(s, root, "dmesg", syslog=False)
        elif style == "torchrun_nodes":
            for n in job.nodes:
                _write(os.path.join(root, "console", f"{n.short}.log"), [ln for _, ln in consoles[n.index]])
            _kernel_files(s, root, "syslog", syslog=True)
        else:
            _k8s(s, root, {n.index: [ln for _, ln in consoles[n.index]] for n in job.nodes})
    else:
        per = {r: sorted((x for x in s.lines.get(r, []) if x[0] <= s.exits[r].t), key=lambda x: x[0])
               for r in range(job.world)}
        if style == "srun_direct":
            width = len(str(job.world - 1))
            rows = [(t, f"{r:0{width}d}: {ln}") for r in range(job.world) for t, ln in per[r]]
            codes = {r: (s.exits[r].t, s.exits[r].code) for r in range(job.world)}
            rows += s.sched + _srun_exits(job, codes, task_of_node=False)
            _write(os.path.join(root, f"slurm-{job.slurm_id}.out"), [ln for _, ln in sorted(rows)])
            _kernel_files(s, root, "dmesg", syslog=False)
        else:
            _k8s(s, root, {n.index: [ln for _, ln in per[n.node_rank * job.nproc]] for n in job.nodes})
    out = []
    for dirpath, _, files in os.walk(root):
        out += [os.path.relpath(os.path.join(dirpath, f), root) for f in files]
    return sorted(out)


def _k8s(s: Story, root: str, logs: dict[int, list[str]]) -> None:
    job = s.job
    pool = f"gke-{job.job_id[-4:]}-a3-pool-{job.rng.getrandbits(16):04x}"
    for n in job.nodes:
        _write(os.path.join(root, "pods", f"{n.short}.log"), logs[n.index])
        ranks = job.ranks_on(n)
        end = max(s.exits[r].t for r in ranks) + 3
        codes = [s.exits[r].code for r in ranks]
        if job.nproc == 1:
            code = codes[0] if codes[0] >= 0 else 128 - codes[0]
        else:
            code = 1 if any(c != 0 for c in codes) else 0
        k8s_node = f"{pool}-{n.index:03d}"
        _write(os.path.join(root, "describe", f"{n.short}.txt"), _describe(s, n, k8s_node, job.t0 - 60, end, code))
        kern = s.kernel.get(n.index)
        if kern:
            _write(os.path.join(root, "nodes", f"{k8s_node}.dmesg"), [ln for _, ln in sorted(kern)])
