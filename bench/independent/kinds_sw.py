"""Failures that start in the program, its configuration, its storage or its scheduler."""

from __future__ import annotations

from . import formats as F
from .kinds_hw import label
from .story import PG, Exit, Story, agents, external_kill, propagate, warmup

DL = "/usr/local/lib/python3.10/dist-packages/torch/utils/data"


def _victim(s: Story) -> int:
    return s.job.rng.randrange(s.job.world)


def cuda_oom(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = _victim(s)
    node, lr = job.by_rank(r)
    # c10/cuda/CUDACachingAllocator.cpp: DeviceCachingAllocator::malloc builds the message; the Python type is
    # torch.OutOfMemoryError from torch 2.4 on and torch.cuda.OutOfMemoryError before
    exc = "torch.OutOfMemoryError" if job.torch_new else "torch.cuda.OutOfMemoryError"
    total = rng.choice([79.15, 79.19, 39.39, 93.1])
    msg = (f"{exc}: CUDA out of memory. Tried to allocate {rng.choice([1.95, 2.0, 512.0, 3.52])} "
           f"{rng.choice(['GiB', 'MiB'])}. GPU {lr} has a total capacity of {total} GiB of which "
           f"{rng.randint(2, 900)}.{rng.randint(10, 99)} MiB is free. Including non-PyTorch memory, this process has "
           f"{total - 0.9:.2f} GiB memory in use. Of the allocated memory {total - 4:.2f} GiB is allocated by PyTorch, "
           f"and {rng.randint(100, 999)}.{rng.randint(10, 99)} MiB is reserved by PyTorch but unallocated. If reserved "
           "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
           "fragmentation.  See documentation for Memory Management  "
           "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    tb = F.py_traceback([*F.TRAIN_FRAMES, ("/workspace/model/attention.py", 88, "forward",
                                           "scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale")], msg)
    s.emit(r, t, tb)
    s.exits[r] = Exit(t + 0.5, 1, "\n".join(tb))
    propagate(s, t, [r])
    label(s, "cuda_oom", r, job.host(node), msg[:160], f"CUDA out of memory on rank {r}", True)


CORRUPT = [("/workspace/data/images.py", 77, "__getitem__", 'img = Image.open(path).convert("RGB")',
            "OSError", "image file is truncated ({n} bytes not processed)"),
           ("/workspace/data/shards.py", 52, "_load", "sample = pickle.load(fh)",
            "_pickle.UnpicklingError", "pickle data was truncated"),
           ("/workspace/data/tokens.py", 140, "__getitem__", "buf = zlib.decompress(raw)",
            "zlib.error", "Error -3 while decompressing data: invalid stored block lengths")]


def corrupt_data(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = _victim(s)
    node, _ = job.by_rank(r)
    path, line, fn, src, etype, emsg = rng.choice(CORRUPT)
    emsg = emsg.format(n=rng.randint(2, 90))
    w = rng.randint(0, 7)
    # torch/_utils.py: ExceptionWrapper.reraise: 'Caught {type} in DataLoader worker process {id}.\nOriginal {tb}'
    inner = F.py_traceback([(f"{DL}/_utils/worker.py", 308, "_worker_loop", "data = fetcher.fetch(index)"),
                            (f"{DL}/_utils/fetch.py", 51, "fetch",
                             "data = [self.dataset[idx] for idx in possibly_batched_index]"),
                            (path, line, fn, src)], f"{etype}: {emsg}")
    outer_exc = (f"{etype}: Caught {etype.split('.')[-1]} in DataLoader worker process {w}.\nOriginal "
                 + "\n".join(inner))
    tb = F.py_traceback([*F.TRAIN_FRAMES, ("/workspace/trainer.py", 188, "step", "batch = next(self.it)"),
                         (f"{DL}/dataloader.py", 631, "__next__", "data = self._next_data()"),
                         (f"{DL}/dataloader.py", 1346, "_next_data", "return self._process_data(data)"),
                         (f"{DL}/dataloader.py", 1372, "_process_data", "data.reraise()"),
                         ("/usr/local/lib/python3.10/dist-packages/torch/_utils.py", 705, "reraise",
                          "raise exception")],
                        outer_exc)
    shard = f"/data/train/shard-{rng.randint(0, 4095):05d}"
    s.emit(r, t - 2, F.app_log(job, r, t - 2, f"opening {shard}"))
    s.emit(r, t, tb)
    s.exits[r] = Exit(t + 0.3, 1, "\n".join(tb))
    propagate(s, t, [r])
    label(s, "corrupt_input_file_one_rank", r, job.host(node), f"{etype}: {emsg}", f"corrupt input {shard}", True)


def straggler(s: Story) -> None:
    """One rank stops issuing collectives (stuck in Python, its data loader, a GIL deadlock) and prints nothing;
    only the others' watchdogs and the sequence numbers in ProcessGroupNCCL's status lines tell which."""
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = _victim(s)
    node, _ = job.by_rank(r)
    propagate(s, t, [r], neighbours=False)
    t_to = min(e.t for e in s.exits.values() if not e.by_agent)
    if job.torch_new:
        first = min((q for q in s.exits if q != r and not s.exits[q].by_agent), key=lambda q: s.exits[q].t)
        for q in [r] + [q for q in range(job.world) if q != r and rng.random() < 0.3]:
            enq = job.seq - 1 if q == r else job.seq
            td = t_to + rng.uniform(0.5, 3)
            # ProcessGroupNCCL.cpp: HeartbeatMonitor::getNCCLWatchdogTimeoutErrorMsg (dump signal from another rank)
            s.emit(q, td, [F.c10(job, q, td, "E", "ProcessGroupNCCL.cpp:1922", f"{PG.format(r=q)} Observed flight "
                                 "recorder dump signal from another rank via TCPStore."),
                           F.c10(job, q, td, "E", "ProcessGroupNCCL.cpp:1987", f"{PG.format(r=q)} Received a dump "
                                 f"signal due to a collective timeout from  rank {first} and we will try our best to "
                                 f"dump the debug info. Last enqueued NCCL work: {enq}, last completed NCCL work: "
                                 f"{job.seq - 1}.This is most likely caused by incorrect usages of collectives, e.g., "
                                 "wrong sizes used across ranks, the order of collectives is not same for all ranks "
                                 "or the scheduled collective, for some reason, didn't run. Additionally, this can be "
                                 "caused by GIL deadlock or other reasons such as network errors or bugs in the "
                                 "communications library (e.g. NCCL), etc. ")])
    label(s, "nccl_watchdog_timeout_straggler_rank", r, job.host(node),
          f"Last enqueued NCCL work: {job.seq - 1}, last completed NCCL work: {job.seq - 1}",
          f"rank {r} never issued collective {job.seq}", job.torch_new,
          ["Watchdog caught collective operation timeout"])


def _vcode(v: str) -> int:
    # NVIDIA/nccl src/nccl.h.in: NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z from 2.9 on
    a, b, c = (int(x) for x in v.split("."))
    return a * 10000 + b * 100 + c


def version_mismatch(s: Story) -> None:
    job, rng = s.job, s.job.rng
    odd = rng.choice([n for n in job.nodes if n.node_rank != 0])
    other = rng.choice([v for v in ("2.21.5", "2.23.4", "2.26.2", "2.19.3") if v != job.nccl_version])
    t = job.t0 + rng.uniform(8, 20)
    first_odd = odd.node_rank * job.nproc
    for r in range(job.world):
        n, _ = job.by_rank(r)
        mine, peer = (other, job.nccl_version) if n is odd else (job.nccl_version, other)
        i = 0 if n is odd else first_odd
        # src/init.cc: initTransportsRank: 'Mismatched NCCL version detected : rank %d version %d rank %d version %d'
        warn = f"Mismatched NCCL version detected : rank {i} version {_vcode(peer)} rank {r} version {_vcode(mine)}"
        tr = t + rng.uniform(0, 1.5)
        rows = [F.nccl_warn(job, r, "init.cc:775", warn)] if job.nccl_debug else []
        # torch/csrc/distributed/c10d/NCCLUtils.hpp: C10D_NCCL_CHECK -> 'NCCL error in: %s:%d, %s, NCCL version %s'
        exc = (f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL."
               f"cpp:2006, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version {mine}\n"
               f"ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n{warn}")
        tb = F.py_traceback([("/workspace/train.py", 61, "setup", "dist.barrier()"),
                             ("/usr/local/lib/python3.10/dist-packages/torch/distributed/c10d_logger.py", 81,
                              "wrapper", "return func(*args, **kwargs)"),
                             ("/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", 4159,
                              "barrier", "work = group.barrier(opts=opts)")], exc)
        s.emit(r, tr, rows + tb)
        s.exits[r] = Exit(tr + 0.2, 1, "\n".join(tb))
    agents(s)
    label(s, "nccl_version_mismatch", None, job.host(odd),
          "Mismatched NCCL version detected",
          f"{odd.short} runs NCCL {other}, the rest {job.nccl_version}", True)


def ckpt_hang(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = 0 if rng.random() < 0.4 else _victim(s)
    node, _ = job.by_rank(r)
    step = rng.randint(1, 90) * 1000
    for q in range(job.world):
        if q == 0 or rng.random() < 0.1:
            s.emit(q, t - 1, F.app_log(job, q, t - 1, f"saving checkpoint step={step} to /checkpoints/run/step_{step}"))
    present = rng.random() < 0.7
    if present:
        human = rng.random() < 0.5
        # torvalds/linux fs/nfs (SUNRPC): 'nfs: server %s not responding, still trying'; kernel/hung_task.c:
        # check_hung_task: 'INFO: task %s:%d blocked for more than %ld seconds.'
        s.kmsg(node, t + 40, F.dmesg(node, t + 40, "nfs: server fs01.storage not responding, still trying", human))
        s.kmsg(node, t + 250, [F.dmesg(node, t + 250, f"INFO: task python3:{job.pid(r)} blocked for more than 245 "
                                                        "seconds.", human),
                               F.dmesg(node, t + 250, "      Tainted: P           OE     5.15.0-105-generic "
                                                        "#115-Ubuntu", human),
                               F.dmesg(node, t + 250, '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables '
                                                        "this message.", human)])
    job.op = "_ALLGATHER_BASE"
    propagate(s, t, [r], neighbours=False)
    e = s.exits.get(r)
    if e is not None and e.by_agent:  # stuck in D state: SIGTERM does nothing, the agent escalates
        s.exits[r] = Exit(e.t + 30, -9, by_agent=True)
        s.say(node, e.t + 30, F.agent(job, node, e.t + 30, "W", "torch.distributed.elastic.multiprocessing.api", 916,
                                      f"Unable to shutdown process {job.pid(r)} via Signals.SIGTERM, forcefully "
                                      "exiting via Signals.SIGKILL"))
    label(s, "dcp_checkpoint_save_hang", r, job.host(node), "nfs: server fs01.storage not responding" if present
          else "saving checkpoint", f"rank {r} hung writing its checkpoint shard", present)


def config_error(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = job.t0 + rng.uniform(2, 8)
    if rng.random() < 0.5:
        cls, exc = "python_env_module_missing_all_ranks", "ModuleNotFoundError: No module named 'flash_attn'"
        frames = [("/workspace/train.py", 14, "<module>", "from model.attention import FlashBlock"),
                  ("/workspace/model/attention.py", 3, "<module>", "import flash_attn")]
    else:
        cls = "missing_input_data_all_ranks"
        exc = "FileNotFoundError: [Errno 2] No such file or directory: '/data/tokenized/train_000.bin'"
        frames = [*F.TRAIN_FRAMES[:2], ("/workspace/data/tokens.py", 31, "__init__", "self.mm = np.memmap(path)")]
    for r in range(job.world):
        tr = t + rng.uniform(0, 4)
        tb = F.py_traceback(frames, exc)
        s.emit(r, tr, tb)
        s.exits[r] = Exit(tr + 0.1, 1, "\n".join(tb))  # after the traceback it printed
    agents(s)
    label(s, cls, None, None, exc, "the same error on every rank at start-up", True)


def time_limit(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    why = "TIME LIMIT" if rng.random() < 0.7 else "PREEMPTION"
    # SchedMD/slurm src/slurmd/slurmstepd/req.c / mgr.c: '*** %s ON %s CANCELLED AT %s DUE TO %s ***'
    s.sched.append((t, f"slurmstepd: error: *** JOB {job.slurm_id} ON {job.nodes[0].short} CANCELLED AT "
                       f"{F.slurm_time(t)} DUE TO {why} ***"))
    for n in job.nodes:
        s.sched.append((t + 0.1, f"slurmstepd: error: *** STEP {job.slurm_id}.0 ON {n.short} CANCELLED AT "
                                 f"{F.slurm_time(t)} DUE TO {why} ***"))
    # src/srun/srun.c / step_launch.c: 'Job step aborted: Waiting up to %d seconds for job step to finish.'
    s.sched.append((t + 0.2, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."))
    if job.style == "slurm_torchrun":
        external_kill(s, t, job.nodes, why)
    else:
        for r in range(job.world):
            s.exits[r] = Exit(t + rng.uniform(0.1, 1.5), -15, by_agent=True)
    for r in rng.sample(range(job.world), k=min(3, job.world) if job.torch_new else 0):  # late teardown noise
        tr = t + rng.uniform(0.2, 1.0)
        s.emit(r, tr, F.c10(job, r, tr, "W", "ProcessGroupNCCL.cpp:1662", f"{PG.format(r=r)} Failed to check the "
                            "\"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), with "
                            "error: Connection reset by peer"))
    cls = "slurm_time_limit" if why == "TIME LIMIT" else "workers_killed_sigterm_external"
    label(s, cls, None, None, f"CANCELLED AT {F.slurm_time(t)} DUE TO {why}", f"Slurm {why.lower()}", True)


def k8s_oomkilled(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = _victim(s)
    node, _ = job.by_rank(r)
    # torvalds/linux mm/oom_kill.c: __oom_kill_process under a memory cgroup limit
    kill = (f"Memory cgroup out of memory: Killed process {job.pid(r) + 310000} (python3) total-vm:"
            f"{rng.randint(90, 300) * 1048576}kB, anon-rss:{rng.randint(60, 200) * 1048576}kB, file-rss:0kB, "
            "shmem-rss:0kB, UID:0 pgtables:412880kB oom_score_adj:-997")
    if rng.random() < 0.5:
        s.kmsg(node, t, F.dmesg(node, t, kill, True))
    s.exits[r] = Exit(t, -9)
    # containerd's CRI plugin reports reason OOMKilled when the container's cgroup saw an OOM kill
    s.pods[node.index] = {"reason": "OOMKilled", "code": 137 if job.nproc == 1 else 1,
                          "event": ("Warning", "BackOff", "Back-off restarting failed container pytorch")}
    propagate(s, t, [r])
    label(s, "k8s_container_oomkilled", r, job.host(node), "Reason:       OOMKilled", f"pod {node.short} OOMKilled",
          True)


def k8s_evicted(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    node = rng.choice(job.nodes)
    # kubernetes pkg/kubelet/eviction/helpers.go: nodeLowMessageFmt, thresholdMetMessageFmt, containerMessageFmt
    msg = (f"The node was low on resource: memory. Threshold quantity: 100Mi, available: "
           f"{rng.randint(20000, 99000)}Ki. "
           f"Container pytorch was using {rng.randint(300, 900)}Gi, request is 0, has larger consumption of memory. ")
    s.pods[node.index] = {"reason": "Evicted", "message": msg, "code": 143,
                          "event": ("Warning", "Evicted", msg)}
    if job.nproc > 1:
        external_kill(s, t + 0.5, [node], "evicted")
    else:
        for r in job.ranks_on(node):
            s.exits[r] = Exit(t + 1, -15, by_agent=True)
    propagate(s, t, job.ranks_on(node))
    label(s, "k8s_jobset_failfast_pod_deleted", None, job.host(node), "The node was low on resource: memory.",
          f"pod {node.short} evicted under node memory pressure", True)
