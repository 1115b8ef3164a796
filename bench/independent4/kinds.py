"""Failure kinds: the initiating facts of each, its truth label, and which layouts it can happen under.

The label follows ../shared/corpus/README.md: the rank (and host) where the failure started, the host alone for a
node-level fault, both null for a job-wide cause (a bad setting on every rank, a scheduler preemption).
"""

from __future__ import annotations

from . import launchers as L
from .aftermath import play
from .clocks import slurm, wall
from .nccl_torch import (
    Rec,
    cuda_oom,
    cuda_runtime_error,
    dataloader_truncated,
    dump_signal,
    faulthandler_segv,
    ib_completion_error,
    ib_port_event,
    invalid_usage_init,
    missing_file,
    nccl_ifname_env,
    nccl_no_interface,
    pg,
    py,
    remote_error,
    watchdog_cuda_error,
)
from .story import Job

ALL = ("slurm_tasks", "ray_train", "mpirun_horovod", "kubeflow", "jax_slurm")
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "xid79": ("xid_79", ("slurm_tasks", "ray_train", "mpirun_horovod")),
    "ecc": ("gpu_uncorrectable_ecc", ("slurm_tasks", "ray_train", "mpirun_horovod", "kubeflow")),
    "host_oom": ("rank_process_killed_sigkill_host_oom", ("slurm_tasks", "ray_train", "mpirun_horovod", "jax_slurm")),
    "segv": ("rank_segfault_sigsegv", ALL),
    "cuda_oom": ("cuda_oom", ALL),
    "ib_flap": ("nccl_ib_completion_error", ("slurm_tasks", "ray_train", "kubeflow")),
    "straggler": ("nccl_watchdog_timeout_straggler_rank", ("slurm_tasks", "ray_train", "mpirun_horovod", "kubeflow")),
    "bad_ifname": ("nccl_bootstrap_no_socket_interface", ("slurm_tasks", "ray_train", "kubeflow")),
    "missing_data": ("missing_input_data_all_ranks", ("mpirun_horovod", "jax_slurm", "ray_train")),
    "corrupt": ("corrupt_input_file_one_rank", ("slurm_tasks", "ray_train", "mpirun_horovod", "kubeflow")),
    "node_lost": ("node_loss_peer_processes_killed", ("slurm_tasks", "ray_train", "mpirun_horovod", "jax_slurm")),
    "preempt": ("workers_killed_sigterm_external", ("slurm_tasks", "jax_slurm", "kubeflow")),
    "illegal_mem": ("illegal_memory_access_kernel", ("slurm_tasks", "ray_train", "mpirun_horovod", "kubeflow")),
    "container_oom": ("k8s_container_oomkilled", ("kubeflow",)),
}
NODE_LOST_CLASS = {"slurm_tasks": "slurm_node_failure", "ray_train": "node_lost_ray_heartbeat_missed"}


def host_label(job: Job, h: int) -> str:
    """The name a reader of these files would give the host: Ray names nodes by IP, the rest by host/pod name."""
    return job.hosts[h].ip if job.layout == "ray_train" else job.hosts[h].name


def _label(job: Job, rank: int | None, host: int | None, evidence: str, cause: str) -> None:
    cls = KINDS[job.kind][0]
    if job.kind == "node_lost":
        cls = NODE_LOST_CLASS.get(job.layout, cls)
    job.label.update(failure_class=cls, rank=rank, host=None if host is None else host_label(job, host),
                     evidence=evidence, root_cause=cause)


def apply(job: Job) -> float:
    """Add the kind's events and label; play the aftermath. Returns the fault's true time."""
    rng = job.rng
    t_f = rng.uniform(400, 5000)
    if job.kind in ("bad_ifname", "missing_data"):
        t_f = rng.uniform(5, 12)
    seq = job.seq_at(t_f)
    r0 = rng.randrange(job.world)
    h0 = job.host_of[r0]
    if job.kind == "node_lost" and job.layout != "slurm_tasks" and h0 == 0:
        # not the launch node: losing mpirun's node, Ray's head or JAX's coordinator ends the job another way
        r0 = rng.choice([r for r in range(job.world) if job.host_of[r] != 0])
        h0 = job.host_of[r0]
    job.label["t_fault"] = t_f
    globals()["_" + job.kind](job, t_f, seq, r0, h0)
    if job.kind not in ("preempt",) or job.layout != "kubeflow":
        play(job, t_f, seq)
    return t_f


def _cuda_fault(job: Job, t: float, r0: int, err: str) -> None:
    """A sticky CUDA error: raised from the step (exit 1), or seen first by the watchdog (SIGABRT)."""
    if job.framework == "horovod" or job.rng.random() < 0.5:
        job.say(t, r0, cuda_runtime_error(err))
        job.exits[r0] = (t + 0.3, 1)
        job.label.setdefault("exc", {})[r0] = ("RuntimeError", f"RuntimeError: CUDA error: {err}")
    else:
        job.say(t, r0, watchdog_cuda_error(r0, err))
        job.exits[r0] = (t + 0.1, -6)


def _uuid(job: Job) -> str:
    x = f"{job.rng.getrandbits(128):032x}"
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def _xid79(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    bus = job.hosts[h0].pci_buses[job.local_of[r0]]
    line = L.xid(bus, 79, "'<unknown>'", "<unknown>", L.XID_TEXT[79])
    job.kern(t, h0, [line, f"NVRM: GPU at PCI:{bus}: GPU-{_uuid(job)}"])
    _cuda_fault(job, t + job.rng.uniform(0.3, 4), r0, "unspecified launch failure")
    _label(job, r0, h0, line, "the GPU under this rank fell off the PCIe bus (Xid 79)")


def _ecc(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    code = job.rng.choice((48, 94))
    bus = job.hosts[h0].pci_buses[job.local_of[r0]]
    job.kern(t, h0, [L.xid(bus, code, str(job.pid_of[r0]), "python3", L.XID_TEXT[code])])
    _cuda_fault(job, t + job.rng.uniform(0.05, 1), r0, "uncorrectable ECC error encountered")
    _label(job, r0, h0, "CUDA error: uncorrectable ECC error encountered",
           f"uncorrectable ECC error in this rank's GPU memory (Xid {code})")


def _host_oom(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    comm = job.rng.choice(("python3", "pt_main_thread", "python"))
    pid = job.pid_of[r0]
    lines = L.oom_kill(comm, pid, job.rng.randint(180, 400) * 2**20, job.rng.randint(120, 170) * 2**20, False)
    job.kern(t - 0.2, h0, lines)
    job.exits[r0] = (t, -9)
    _label(job, r0, h0, f"Killed process {pid} ({comm})", "the kernel's OOM killer killed this rank (host RAM)")


def _segv(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    tid = f"{job.rng.getrandbits(44):012x}"
    job.say(t, r0, faulthandler_segv(tid))
    job.kern(t + 0.01, h0, [L.segfault(job.rng.choice(("python3", "pt_autograd_0")), job.pid_of[r0],
                                       "fused_rope_cuda.cpython-311-x86_64-linux-gnu.so")])
    job.exits[r0] = (t + 0.05, -11)
    _label(job, r0, h0, "Fatal Python error: Segmentation fault", "a native extension segfaulted in this rank")


def _cuda_oom(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    rng = job.rng
    if job.framework == "jax":
        n = rng.randint(4, 30) * 2**30
        job.say(t, r0, py("Traceback (most recent call last):", '  File "/workspace/train.py", line 142, in <module>',
                          "    state, metrics = p_train_step(state, batch)", *L.jax_oom(n)))
        evidence = f"RESOURCE_EXHAUSTED: Out of memory while trying to allocate {n} bytes."
    else:
        want = f"{rng.uniform(1, 12):.2f} GiB"
        job.say(t, r0, cuda_oom(job.local_of[r0], want, f"{rng.uniform(0.1, 0.9):.2f} GiB",
                                f"{rng.uniform(77, 78.9):.2f} GiB", f"{rng.uniform(60, 70):.2f} GiB",
                                f"{rng.uniform(1, 5):.2f} GiB"))
        evidence = f"CUDA out of memory. Tried to allocate {want}"
    job.exits[r0] = (t + 0.4, 1)
    job.label.setdefault("exc", {})[r0] = ("OutOfMemoryError", evidence if job.framework == "jax" else
                                           f"torch.OutOfMemoryError: {evidence}")
    _label(job, r0, h0, evidence, "this rank ran out of GPU memory")


def _ib_flap(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    rng = job.rng
    job.ib, job.nccl_warn = True, rng.random() < 0.8
    roce = rng.random() < 0.5
    k = job.local_of[r0]
    host = job.hosts[h0]
    hca = host.ib_devs[k]
    if roce:
        pci = f"0000:{0x17 + 0x10 * k:02x}:00.0"
        job.kern(t, h0, [L.mlx5_link(pci, f"ens{k + 1}f0np0", False)])
        job.kern(t + rng.uniform(2, 25), h0, [L.mlx5_link(pci, f"ens{k + 1}f0np0", True)])
    up = t + rng.uniform(3, 25)
    evidence = f"NET/IB : {hca}:1 Got non-fatal async event: port error(10)"
    if job.nccl_warn:
        for r in job.ranks_on(h0):
            if job.local_of[r] == k:
                job.say(t + 0.05, r, [ib_port_event(hca, 1, "port error", 10)])
                job.say(up, r, [ib_port_event(hca, 1, "port active", 9)])
    elif roce:
        evidence = L.mlx5_link(pci, f"ens{k + 1}f0np0", False)
    else:
        evidence = "(no line: NCCL_DEBUG unset and no kernel link message on an IB fabric)"
    # the QPs on that port exhaust their retries on both ends of each link that crosses it
    peers = [x for x in ((r0 - job.ppn) % job.world, (r0 + job.ppn) % job.world) if job.host_of[x] != h0]
    te = t + rng.uniform(14, 30)
    gid = (lambda h: f"::ffff:{job.hosts[h].ip}") if roce else None
    for a, b in [(r0, p) for p in peers[:1]] + [(p, r0) for p in peers[:1]]:
        ha, hb = job.host_of[a], job.host_of[b]
        warn = ib_completion_error(f"{job.hosts[hb].ip}<{43000 + b}>", job.hosts[ha].ib_devs[job.local_of[a]],
                                   (gid(ha), gid(hb)) if gid else None)
        if job.nccl_warn:
            job.say(te, a, [warn])
        job.say(te + 0.05, a, remote_error(job.label["nccl_version"], warn.msg))
        job.exits[a] = (te + 0.2, 1)
        job.label.setdefault("exc", {})[a] = ("DistBackendError", "torch.distributed.DistBackendError: NCCL error in: "
                                              "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, remote "
                                              "process exited or there was a network error")
        te += rng.uniform(0.01, 0.5)
    _label(job, None, h0, evidence, f"the IB/RoCE port {hca}:1 on this host went down (link flap)")


def _straggler(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    rng = job.rng
    job.hung.add(r0)
    job.kill_on_bad_exit = True
    evidence = "(no line: only the missing watchdog and sequence numbers single it out)"
    if job.framework == "horovod":
        names = sorted(f"allreduce.DistributedOptimizer.Allreduce.grad_layers.{rng.randint(0, 47)}.mlp.w{i}"
                       for i in (1, 2))  # a std::set<std::string> in stall_inspector.cc: printed sorted
        shutdown = 600
        for k in range(1, shutdown // 60 + 1):
            msg = L.stall_warning(60, {r0: names}, shutdown if k == shutdown // 60 else None)
            level = "E" if k == shutdown // 60 else "W"
            job.say(t + 60 * k + rng.uniform(0, 1), 0,
                    [Rec("hvd", level, "/tmp/pip-build/horovod/common/stall_inspector.cc:105", msg)])
        t_sd = t + shutdown + rng.uniform(0.5, 2)
        for r in range(job.world):
            if r != r0:
                job.say(t_sd + rng.uniform(0, 0.4), r, py("Traceback (most recent call last):",
                        '  File "/workspace/train_hvd.py", line 141, in <module>', "    optimizer.step()",
                        f"horovod.common.exceptions.HorovodInternalError: {L.HVD_SHUT_DOWN}"))
                job.exits[r] = (t_sd + 0.5 + rng.uniform(0, 0.4), 1)
        evidence = f"{r0}!: [{names[0]}"
    else:
        timeout_first = t + job.timeout_s
        if job.torch_new and rng.random() < 0.6:  # flight recorder on: the heartbeat monitor dumps on every rank
            src = rng.choice([r for r in range(job.world) if r != r0])
            for r in range(job.world):
                if r != src:
                    job.say(timeout_first + rng.uniform(0.5, 3), r,
                            dump_signal(r, src, seq - 1 if r == r0 else seq, seq - 1))
            evidence = f"{pg(r0)} Received a dump signal due to a collective timeout from rank {src}"
        if job.layout == "slurm_tasks" and rng.random() < 0.7:  # someone ran ncclras while it hung
            count = seq + 11
            node = job.hosts[h0].ip
            lines = L.ras_status(len(job.hosts), job.ppn, job.world, f"{rng.getrandbits(64):016x}", "AllReduce", count,
                                 [(r0, count - 1, job.pid_of[r0], node)], rng.uniform(0.1, 3))
            job.add(t + job.timeout_s * rng.uniform(0.2, 0.7), None, 0, "ras", [Rec("raw", "", "", x) for x in lines])
            if evidence.startswith("(no line"):
                evidence = f"Rank {r0} has launched up to operation {count - 1}"
    _label(job, r0, h0, evidence, "this rank stopped issuing collectives; every other rank timed out waiting for it")


def _bad_ifname(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    rng = job.rng
    value = rng.choice(("ib9", "eth2", "enp1s0f1", "bond1"))
    for r in range(job.world):
        tr = t + rng.uniform(0, 1.5)
        if job.nccl_info:
            job.say(tr - 0.01, r, [nccl_ifname_env(value)])
        if job.nccl_warn:
            job.say(tr, r, [nccl_no_interface()])
        job.say(tr + 0.02, r, invalid_usage_init(job.label["nccl_version"], "Bootstrap : no socket interface found"))
        job.exits[r] = (tr + 0.2, 1)
        job.label.setdefault("exc", {})[r] = ("DistBackendError", "torch.distributed.DistBackendError: NCCL error: "
                                              "invalid usage ... Bootstrap : no socket interface found")
    _label(job, None, None, "Bootstrap : no socket interface found",
           f"NCCL_SOCKET_IFNAME={value} names no interface on these hosts (set for the whole job)")


def _missing_data(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    path = f"/{job.rng.choice(('fsx', 'lustre', 'mnt/data'))}/{job.name}/index/train.idx"
    for r in range(job.world):
        tr = t + job.rng.uniform(0, 2)
        job.say(tr, r, missing_file(path))
        job.exits[r] = (tr + 0.1, 1)
        job.label.setdefault("exc", {})[r] = ("FileNotFoundError", f"FileNotFoundError: [Errno 2] No such file or "
                                              f"directory: '{path}'")
    _label(job, None, None, "FileNotFoundError: [Errno 2] No such file or directory",
           "the dataset index is missing for every rank (path configured for the whole job)")


def _corrupt(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    n = job.rng.randint(3, 900)
    job.say(t, r0, dataloader_truncated(job.rng.randint(0, 7), f"/data/shards/{job.rng.randint(0, 4095):05d}/"
                                        f"{job.rng.getrandbits(40):010x}.jpg", n))
    job.exits[r0] = (t + 0.3, 1)
    job.label.setdefault("exc", {})[r0] = ("OSError", f"OSError: image file is truncated ({n} bytes not processed)")
    _label(job, r0, h0, f"image file is truncated ({n} bytes not processed)", "one rank read a truncated input file")


def _node_lost(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    job.dead_hosts[h0] = t
    job.label["dead_task"] = job.ranks_on(h0)[0]
    job.label["hb_timeout"] = job.rng.choice((10, 100))
    job.kill_on_bad_exit = True
    name = job.hosts[h0].name
    evidence = {"slurm_tasks": f"srun: error: Node failure on {name}",
                "ray_train": f"address: {job.hosts[h0].ip} and node name: {job.hosts[h0].ip} has been marked dead",
                "jax_slurm": f"/job:jax_worker/replica:0/task:{job.label['dead_task']}",
                "mpirun_horovod": f"Remote daemon: [[{job.jobid % 60000},0],{h0}] on node {name}"}[job.layout]
    _label(job, None, h0, evidence, "this node stopped (power, kernel panic or network loss); its ranks vanished")


def _preempt(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    rng = job.rng
    job.label["cancel_why"] = "PREEMPTION"
    if job.layout == "kubeflow":
        for h in range(len(job.hosts)):
            th = t + rng.uniform(0, 3)
            ranks = job.ranks_on(h)
            recs = [Rec("agent", "W", "torch/distributed/elastic/agent/server/api.py:704",
                        "Received Signals.SIGTERM death signal, shutting down workers")]
            recs += [Rec("agent", "W", "torch/distributed/elastic/multiprocessing/api.py:897",
                         L.agent_sigterm(job.pid_of[r])) for r in ranks]
            recs += [Rec("raw", "", "", x) for x in ("Traceback (most recent call last):",
                     '  File "/usr/local/bin/torchrun", line 8, in <module>', "    sys.exit(main())",
                     L.signal_exception(job.label.get("agent_pid", 1)))]
            job.add(th, None, h, "launch", recs)
            for r in ranks:
                job.exits[r] = (th + 0.3, -15)
        job.label["k8s_failed"] = (t + 8, L.pytorchjob_failed(job.name, len(job.hosts) - 1, "Worker"))
        job.label["k8s_killing"] = t - 0.5
        _label(job, None, None, "got signal: 15", "the scheduler preempted the job: every pod was sent SIGTERM")
        return
    for h in range(len(job.hosts)):
        stamp = slurm(wall(job.epoch, job.hosts[h], t))
        job.add(t + 0.01 * h, None, h, "launch", [Rec("raw", "", "", L.slurmstepd_cancel(
            "JOB" if h == 0 else "STEP", str(job.jobid) if h == 0 else f"{job.jobid}.0", job.hosts[h].name, stamp,
            "PREEMPTION"))])
    for r in range(job.world):
        job.exits[r] = (t + rng.uniform(0.05, 0.6), -15)
    _label(job, None, None, "DUE TO PREEMPTION", "the scheduler preempted the job (every task got SIGTERM)")


def _illegal_mem(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    _cuda_fault(job, t, r0, "an illegal memory access was encountered")
    _label(job, r0, h0, "CUDA error: an illegal memory access was encountered",
           "a kernel on this rank accessed invalid memory")


def _container_oom(job: Job, t: float, seq: int, r0: int, h0: int) -> None:
    job.dead_hosts[h0] = t
    job.label["k8s_dead_pod"] = (h0, t)
    job.label["k8s_oomkilled"] = h0
    _label(job, None, h0, "Reason:       OOMKilled", "the pod's container exceeded its memory limit and was killed")
