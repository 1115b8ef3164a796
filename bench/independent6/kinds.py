"""Failure kinds: what the culprit does, and the collateral every other rank prints (ring peers' transport errors,
everyone else's watchdog timeout, flight-recorder dumps). Natural exits only; launchers cut it short later.

KINDS[kind] = (failure_class, level): level "rank" (a rank's fault), "host" (a node's), "job" (nobody's)."""

from __future__ import annotations

from . import kernel, texts
from .story import Job

KINDS = {
    "xid79": ("xid_79", "rank"),
    "xid74": ("nvlink_error", "rank"),  # class_map_additions.json
    "ecc": ("gpu_uncorrectable_ecc", "rank"),
    "host_oom": ("rank_process_killed_sigkill_host_oom", "rank"),
    "straggler": ("nccl_watchdog_timeout_straggler_rank", "rank"),
    "corrupt": ("corrupt_input_file_one_rank", "rank"),
    "disk_full": ("checkpoint_write_failed_disk_full", "rank"),  # class_map_additions.json
    "ib_link": ("nccl_ib_completion_error", "host"),
    "preempt": ("workers_killed_sigterm_external", "job"),
}
LAYOUT_KINDS = {
    "skypilot": ["xid79", "xid74", "ecc", "host_oom", "straggler", "corrupt", "disk_full", "ib_link", "preempt"],
    "composer": ["xid79", "xid74", "ecc", "host_oom", "straggler", "corrupt", "disk_full", "ib_link"],
    "kuberay": ["xid79", "ecc", "host_oom", "straggler", "corrupt", "disk_full", "ib_link"],
}
OPS = (("ALLREDUCE", 1259621), ("_ALLGATHER_BASE", 67108864), ("_REDUCE_SCATTER_BASE", 33554432))


def play(job: Job) -> None:
    """Fill job.out / job.exits / job.kernel with the fault and its collateral."""
    rng = job.rng
    _startup(job)
    dead: dict[int, float] = {}
    if job.kind == "preempt":
        job.extra["sigterm_at"] = job.tf
        job.root_cause = "the job's workers were SIGTERMed from outside (spot reclaim / cancel); no rank failed first"
        return
    if job.kind == "ib_link":
        job.culprit_host = rng.randrange(job.nodes)
        _ib_link(job)
        _timeouts(job, set(job.exits), job.tf)
        return
    if job.kind == "disk_full":
        job.culprit = 0  # rank 0 alone writes the full state dict
    else:
        job.culprit = rng.randrange(job.world)
    c = job.culprit
    {"xid79": _xid79, "xid74": _xid74, "ecc": _ecc, "host_oom": _host_oom, "straggler": _straggler,
     "corrupt": _corrupt, "disk_full": _disk_full}[job.kind](job)
    if job.kind != "straggler":
        dead[c] = job.exits[c][0]
        _ring_peers(job, c, dead[c])
    _timeouts(job, set(job.exits), job.tf)


def _startup(job: Job) -> None:
    for r in range(job.world):
        h = job.hosts[job.node_of(r)]
        t = job.t0 + 20 + job.rng.uniform(0, 3)
        if job.nccl_info:
            comm = f"0x{job.rng.randint(0x55000000, 0x56ffffff):x}"
            for line in texts.nccl_init(h.name, job.pids[r], job.local(r), r, job.world,
                                        job.buses[job.local(r)] + "000", comm, job.ib, h.ip, r == 0, job.nccl_version):
                job.emit(r, t, "nccl", line)
                t += 0.001
    if job.rng.random() < 0.5:  # ranks that came up before the master's TCPStore retry (harmless, hours earlier)
        for r in job.rng.sample(range(job.nproc, job.world), min(3, job.world - job.nproc)):
            job.c10(r, job.t0 + job.rng.uniform(3, 9), [texts.store_retry(job.hosts[0].name)])
    for n in range(job.nodes):
        job.kern(n, job.t0 - job.hosts[n].boot + 12, kernel.boot_noise(job.rng, "550.90.07"))


def _cuda_fail(job: Job, what: str, via_watchdog: bool) -> None:
    """The culprit's CUDA error surfaces either in the step (a Python traceback) or in its watchdog's event query."""
    c, t = job.culprit, job.tf + job.rng.uniform(0.5, 4)
    assert c is not None
    job.extra["cause_marker"] = f"CUDA error: {what}"
    if via_watchdog:
        job.c10(c, t, texts.watchdog_died(c, f"CUDA error: {what}\n" + "\n".join(texts.CUDA_HINT), job.torch_new))
        job.py(c, t + 0.01, ["terminate called after throwing an instance of 'c10::DistBackendError'"])
        job.evidence = f"CUDA error: {what}"
        job.exit(c, t + 0.3, -6)
    else:
        tb = texts.traceback(texts.step_frames(job.script, job.layout), texts.cuda_error(what))
        job.py(c, t, tb)
        job.evidence = f"RuntimeError: CUDA error: {what}"
        job.exit(c, t + 2, 1)


def _xid79(job: Job) -> None:
    c = job.culprit
    assert c is not None
    job.kern(job.node_of(c), job.tf, kernel.xid79(job.buses[job.local(c)]))
    _cuda_fail(job, "unspecified launch failure", job.rng.random() < 0.5)
    if job.kernel_logs:
        job.evidence = "GPU has fallen off the bus."
    job.root_cause = f"GPU {job.local(c)} of rank {c} fell off the bus (Xid 79)"


def _xid74(job: Job) -> None:
    c = job.culprit
    assert c is not None
    job.kern(job.node_of(c), job.tf, kernel.xid74(job.buses[job.local(c)], job.rng.randint(0, 17)))
    _cuda_fail(job, "uncorrectable NVLink error detected during the execution", job.rng.random() < 0.4)
    job.root_cause = f"an NVLink fatal error (Xid 74) on rank {c}'s GPU"


def _ecc(job: Job) -> None:
    c = job.culprit
    assert c is not None
    job.kern(job.node_of(c), job.tf, kernel.xid48(job.buses[job.local(c)], _host_pid(job, c)))
    _cuda_fail(job, "uncorrectable ECC error encountered", job.rng.random() < 0.4)
    job.root_cause = f"an uncorrectable ECC error (Xid 48) on rank {c}'s GPU"


def _host_pid(job: Job, rank: int) -> int:
    """The pid the kernel prints: the host's pid namespace. In a pod it is not the pid the process (and NCCL, and
    Ray) prints inside its container, so no pid join is possible there."""
    return job.pids[rank] + int(job.extra.get("host_pid_offset", 0))


def _host_oom(job: Job) -> None:
    c = job.culprit
    assert c is not None
    cgroup = f"/kubepods/burstable/pod{job.rng.randint(10**7, 10**8)}" if job.layout == "kuberay" else None
    kpid = _host_pid(job, c)
    job.kern(job.node_of(c), job.tf, kernel.oom(kpid, job.rng.randint(180, 420) * 1048576, cgroup))
    job.evidence = f"Killed process {kpid} (python3)"
    job.exit(c, job.tf + 0.05, -9)
    job.root_cause = f"the kernel OOM killer SIGKILLed rank {c} (pid {job.pids[c]})"


def _straggler(job: Job) -> None:
    job.extra["straggler"] = True
    job.root_cause = f"rank {job.culprit} stopped issuing collectives; the others timed out waiting for it"


def _corrupt(job: Job) -> None:
    c = job.culprit
    assert c is not None
    shard = f"/tmp/streaming/train/shard.{job.rng.randint(100, 9999):05d}.mds.zstd"
    t = job.tf + job.rng.uniform(0, 1)
    frames = [*texts.step_frames(job.script, job.layout)[:1],
              (f"{texts.SITE}/torch/utils/data/dataloader.py", 1480, "_process_data", "data.reraise()"),
              (f"{texts.SITE}/torch/_utils.py", 733, "reraise", "raise exception")]
    tb = texts.traceback(frames, texts.streaming_checksum(shard, job.rng.randrange(8)))
    job.py(c, t, tb)
    job.evidence = f"ValueError: Checksum failure: {shard}"
    job.exit(c, t + 1.5, 1)
    job.root_cause = f"rank {c} read a corrupt data shard ({shard})"


def _disk_full(job: Job) -> None:
    t = job.tf + job.rng.uniform(20, 90)  # the save ran for a while before the disk filled
    n = job.rng.randint(40, 900)
    tb = texts.traceback([(f"/workspace/{job.script}", 231, "save_checkpoint", "torch.save(state, path)"),
                          (f"{texts.SITE}/torch/serialization.py", 850, "save", "with _open_zipfile_writer(f) as "
                           "opened_zipfile:"),
                          (f"{texts.SITE}/torch/serialization.py", 690, "__exit__", "self.file_like.write_end_of_"
                           "file()")], texts.disk_full("/checkpoints", n, job.rng.choice((595, 603, 778, 858))))
    job.py(0, t, tb)
    job.evidence = f"PytorchStreamWriter failed writing file data/{n}: file write failed"
    job.exit(0, t + 1, 1)
    job.tf = t
    job.root_cause = "rank 0's checkpoint write failed: the checkpoint volume was full"


def _ib_link(job: Job) -> None:
    """One HCA port on host h goes down: its ranks on that rail and their ring peers on the neighbouring nodes see
    retry-exceeded completions on both ends; NCCL reports the async port event on h (WARN, with NCCL_DEBUG)."""
    rng, h = job.rng, job.culprit_host
    assert h is not None
    hca = rng.randrange(4)
    locs = [lr for lr in range(job.nproc) if lr * 4 // job.nproc == hca]
    bus = f"{rng.randint(0x18, 0xd0):02x}"
    job.kern(h, job.tf, [kernel.link(bus, f"eth{hca + 2}", False)])
    job.kern(h, job.tf + rng.uniform(3, 9), [kernel.link(bus, f"eth{hca + 2}", True)])
    job.extra["hca"] = f"mlx5_{hca}"
    host = job.hosts[h]
    pairs = []
    for lr in locs:
        me = h * job.nproc + lr
        for nb in {(h - 1) % job.nodes, (h + 1) % job.nodes} - {h}:
            pairs.append((me, nb * job.nproc + lr))
    for me, _ in pairs if job.nccl_info else []:  # WARN lines print only with NCCL_DEBUG set
        job.emit(me, job.tf + rng.uniform(0, 0.5), "nccl",
                 texts.nccl_warn(host.name, job.pids[me], job.local(me), "transport/net_ib.cc:1193",
                                 f"NET/IB : mlx5_{hca}:1 Got async event : port error"))
    for a, b in pairs:
        t = job.tf + rng.uniform(15, 38)
        for x, y in ((a, b), (b, a)):
            if x in job.exits:
                continue
            _remote_abort(job, x, t + rng.uniform(0, 0.3),
                          texts.ib_completion(job.hosts[job.node_of(y)].ip, rng.randint(30000, 60000),
                                              rng.choice((129, 244))))
    job.evidence = f"mlx5_{hca}:1 Got async event : port error" if job.nccl_info else kernel.link(bus, f"eth{hca + 2}",
                                                                                                    False)
    job.root_cause = f"an InfiniBand/RoCE port (mlx5_{hca}) on {host.name} went down"


def _remote_abort(job: Job, r: int, t: float, last: str) -> None:
    h = job.hosts[job.node_of(r)]
    if job.nccl_info:
        src = "transport/net_ib.cc:1696" if "NET/IB" in last else "misc/socket.cc:50"
        job.emit(r, t - 0.01, "nccl", texts.nccl_warn(h.name, job.pids[r], job.local(r), src, last))
    job.c10(r, t, texts.watchdog_died(r, "\n".join(texts.nccl_remote(job.nccl_version.split("+")[0], last)),
                                      job.torch_new) + texts.teardown(r, job.torch_new))
    job.py(r, t + 0.01, ["terminate called after throwing an instance of 'c10::DistBackendError'"])
    job.exit(r, t + 0.4, -6)


def _ring_peers(job: Job, dead: int, t_dead: float) -> None:
    """The dead rank's ring peers on the neighbouring nodes (same local rank) see the connection break: at once
    on sockets (FIN), after the IB retry timeout on InfiniBand."""
    rng = job.rng
    if job.nodes < 2:
        return
    n = job.node_of(dead)
    for nb in {(n - 1) % job.nodes, (n + 1) % job.nodes} - {n}:
        peer = nb * job.nproc + job.local(dead)
        if peer in job.exits:
            continue
        ip = job.hosts[n].ip
        if job.ib:
            _remote_abort(job, peer, t_dead + rng.uniform(15, 38), texts.ib_completion(ip, rng.randint(30000, 60000),
                                                                                       rng.choice((129, 244))))
        else:
            _remote_abort(job, peer, t_dead + rng.uniform(0.05, 0.8),
                          texts.socket_closed(ip, rng.randint(30000, 60000)))


def _timeouts(job: Job, gone: set[int], t_coll: float) -> None:
    """Everyone not yet gone times out on the collective in flight at t_coll; with the flight recorder the first
    to time out signals every rank (the straggler included) to dump, each printing its own last enqueued work."""
    rng = job.rng
    op, numel = rng.choice(OPS)
    s = job.seq
    straggler = job.culprit if job.extra.get("straggler") else None
    waiting = [r for r in range(job.world) if r not in gone and r != straggler]
    times = {r: t_coll + job.timeout_s + rng.uniform(0.01, 0.9) for r in waiting}
    first = min(times, key=lambda r: times[r]) if times else None
    job.extra["first_timeout"] = first
    for r in waiting:
        t = times[r]
        ran = int((t - t_coll) * 1000)
        job.c10(r, t, texts.watchdog_timeout(r, s, op, numel, job.timeout_s, ran, s + rng.randint(0, 2), s - 1,
                                             job.torch_new, job.fr))
        if job.fr:
            job.c10(r, t + 0.002 if r == first else times[first] + rng.uniform(0.05, 0.6),  # type: ignore[index]
                    texts.dump_signal(r, "local" if r == first else str(first), s + rng.randint(0, 2), s - 1))
        job.c10(r, t + rng.uniform(1, 3) if job.fr else t + 0.01, texts.teardown(r, job.torch_new))
        job.py(r, t + (3.1 if job.fr else 0.02), ["terminate called after throwing an instance of "
                                                    "'c10::DistBackendError'"])
        job.exit(r, t + (3.3 if job.fr else 0.3), -6)
    if straggler is not None and job.fr and first is not None:
        t = times[first] + rng.uniform(0.05, 0.6)
        job.c10(straggler, t, texts.dump_signal(straggler, str(first), s - 1, s - 1))
        job.evidence = f"{texts.pg(straggler, True)}Received a dump signal due to a collective timeout from  rank " \
                       f"{first} and we will try our best to dump the debug info. Last enqueued NCCL work: {s - 1}"
