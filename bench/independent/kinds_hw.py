"""Failures that start below the training process: GPU Xids, the kernel's OOM killer, a NIC link, a native
crash, /dev/shm, a lost host."""

from __future__ import annotations

from . import formats as F
from .story import Exit, Story, propagate, teardown, warmup

CUDA_TAIL = ("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
             "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with "
             "`TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


def label(s: Story, cls: str, rank: int | None, host: str | None, evidence: str, cause: str, present: bool,
          collateral: list[str] | None = None) -> None:
    s.label.update(failure_class=cls, initiating={"rank": rank, "host": host, "evidence": evidence},
                   root_cause=cause, cause_line_present=present, collateral_signatures=collateral or [])


def _victim(s: Story) -> int:
    return s.job.rng.randrange(s.job.world)


def _cuda_error(s: Story, r: int, t: float, err: str) -> None:
    """The watchdog's CUDA event query fails: c10/cuda/CUDAException.cpp: c10_cuda_check_implementation builds
    'CUDA error: <cudaGetErrorString>' plus the asynchronous-reporting caveat."""
    what = f"CUDA error: {err}\n{CUDA_TAIL}"
    s.emit(r, t, teardown(s, r, t, what, "c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43"))
    s.exits[r] = Exit(t + 0.4, -6)


XID_TEXT = {
    # NVIDIA/open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/kernel_rc.c: krcRcAndNotifyAllChannels /
    # nvErrorLog_va print 'NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s'; the texts are the driver's
    # messages for each Xid as the Xid catalog (docs.nvidia.com/deploy/xid-errors) describes them.
    79: "GPU has fallen off the bus.",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition {p}, "
        "subpartition {q}.",
    94: "Contained ECC error.",
    119: "Timeout after 6s of waiting for RPC response from GPU{g} GSP! Expected function 76 (GSP_RM_CONTROL) "
         "(0x20800a4c 0x4).",
}
XID_CLASS = {79: "xid_79", 48: "gpu_uncorrectable_ecc", 94: "gpu_uncorrectable_ecc", 119: "xid_119"}


def xid(s: Story, code: int) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = _victim(s)
    node, lr = job.by_rank(r)
    pci = node.pci[lr] if node.pci else f"0000:{lr + 16:02x}:00"
    human = rng.random() < 0.5
    present = rng.random() < 0.75  # otherwise nobody collected dmesg
    text = XID_TEXT[code].format(p=rng.randint(0, 7), q=rng.randint(0, 1), g=lr)
    xline = f"NVRM: Xid (PCI:{pci}): {code}, pid={job.pid(r)}, name=python3, {text}"
    if present:
        rows = [F.dmesg(node, t, xline, human)]
        if code == 79:
            rows.append(F.dmesg(node, t + 0.001, f"NVRM: GPU {pci}.0: GPU has fallen off the bus.", human))
        if code == 94:
            rows.append(F.dmesg(node, t + 0.02, f"NVRM: Xid (PCI:{pci}): 63, pid='<unknown>', name=<unknown>, Row "
                                                  "Remapper: New row marked for remapping, reset gpu to activate.",
                                human))
        for i, row in enumerate(rows):
            s.kmsg(node, t + i * 1e-3, row)
    if code == 119:  # the GPU stops answering; the rank's watchdog thread itself gets stuck in the driver
        t_hb = t + 480
        pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
        if job.torch_new:  # the heartbeat monitor is torch >= 2.2; before it the hung rank just goes quiet
            s.emit(r, t_hb, F.c10(job, r, t_hb, "E", "ProcessGroupNCCL.cpp:1423",
                                  f"{pg} ProcessGroupNCCL's watchdog got stuck for 480 seconds without making "
                                  "progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA "
                                  "API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be triggered by "
                                  "another thread holding the GIL inside a CUDA api (for example, CudaEventDestroy), "
                                  "or other deadlock-prone behaviors."))
            s.exits[r] = Exit(t_hb + 1, -6)
        evidence = xline if present else "ProcessGroupNCCL's watchdog got stuck for 480 seconds"
    else:
        err = "unknown error" if code == 79 else "uncorrectable ECC error encountered"
        _cuda_error(s, r, t + rng.uniform(0.05, 2), err)
        evidence = xline if present else f"CUDA error: {err}"
    propagate(s, t, [r])
    label(s, XID_CLASS[code], r, job.host(node), evidence, f"Xid {code} on GPU {lr} of {node.short}", present,
          ["Watchdog caught collective operation timeout"])


def host_oom(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = _victim(s)
    node, _ = job.by_rank(r)
    present = rng.random() < 0.75
    human = rng.random() < 0.5
    pid = job.pid(r)
    # torvalds/linux mm/oom_kill.c: dump_header ('%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d,
    # oom_score_adj=%hd') and __oom_kill_process ('%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB,
    # file-rss:%lukB, shmem-rss:%lukB, UID:%u pgtables:%lukB oom_score_adj:%hd')
    kill = (f"Out of memory: Killed process {pid} (python3) total-vm:{rng.randint(90, 400) * 1048576}kB, "
            f"anon-rss:{rng.randint(60, 300) * 1048576}kB, file-rss:{rng.randint(1, 900) * 1024}kB, "
            f"shmem-rss:{rng.randint(1, 90) * 1024}kB, UID:1000 pgtables:{rng.randint(100, 900) * 1024}kB "
            "oom_score_adj:0")
    if present:
        s.kmsg(node, t - 0.01, F.dmesg(node, t - 0.01, "pt_data_worker invoked oom-killer: gfp_mask=0x140cca("
                                                         "GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
                                       human))
        s.kmsg(node, t, F.dmesg(node, t, kill, human))
        if job.style in ("slurm_torchrun", "srun_direct"):
            # SchedMD/slurm src/plugins/task/cgroup (task_cgroup_memory_check_oom): 'Detected %lu oom_kill event%s
            # in %ps. Some of the step tasks have been OOM Killed.'
            s.sched.append((t + 2, f"slurmstepd: error: Detected 1 oom_kill event in StepId={job.slurm_id}.0. Some "
                                   "of the step tasks have been OOM Killed."))
    s.exits[r] = Exit(t, -9)
    propagate(s, t, [r])
    label(s, "rank_process_killed_host_oom", r, job.host(node), kill if present else "exitcode  : -9",
          f"host OOM killer killed rank {r}", present)


def segfault(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = _victim(s)
    node, _ = job.by_rank(r)
    present = rng.random() < 0.7
    # torvalds/linux arch/x86/mm/fault.c: show_signal_msg ('%s%s[%d]: segfault at %lx ip %px sp %px error %lx')
    # followed by print_vma_addr's ' in %s[%lx+%lx]'
    seg = (f"python3[{job.pid(r)}]: segfault at {rng.choice([0, 8, 0x18])} ip 00007f{rng.randint(0, 16**8):08x} "
           f"sp 00007ffd{rng.randint(0, 16**8):08x} error 4 in libfused_ops.so[7f3a2b400000+1c5000] likely on CPU "
           f"{rng.randint(0, 95)} (core {rng.randint(0, 47)}, socket {rng.randint(0, 1)})")
    if present:
        s.kmsg(node, t, F.dmesg(node, t, seg, rng.random() < 0.5))
        if rng.random() < 0.6:
            # CPython Python/faulthandler.c: faulthandler_fatal_error
            s.emit(r, t - 0.01, ["Fatal Python error: Segmentation fault", "",
                          f"Thread 0x00007f{rng.randint(0, 16**8):08x} (most recent call first):",
                          '  File "/workspace/model/fused.py", line 133 in forward',
                          '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1562 in '
                          "_call_impl", '  File "/workspace/trainer.py", line 201 in fit', ""])
    s.exits[r] = Exit(t, -11)
    propagate(s, t, [r])
    label(s, "rank_segfault_sigsegv", r, job.host(node), seg if present else "exitcode  : -11",
          f"native crash (SIGSEGV) in rank {r}", present)


def shm_sigbus(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    r = _victim(s)
    node, _ = job.by_rank(r)
    wpid = job.pid(r) + 1000 + rng.randint(0, 50)
    if rng.random() < 0.7:
        # torch/csrc/DataLoader.cpp: the worker's SIGBUS handler writes the first line; the main process's
        # _error_if_any_worker_fails raises the RuntimeError with the shared-memory hint
        err = (f"RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Bus error. It is possible that "
               "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.")
        dl = "/usr/local/lib/python3.10/dist-packages/torch/utils/data"
        tb = F.py_traceback([*F.TRAIN_FRAMES,
                             (f"{dl}/dataloader.py", 1133, "_try_get_data",
                              "data = self._data_queue.get(timeout=timeout)"),
                             (f"{dl}/_utils/signal_handling.py", 67, "handler", "_error_if_any_worker_fails()")], err)
        s.emit(r, t, ["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
                      "memory (shm).", *tb])
        s.exits[r] = Exit(t + 0.3, 1, "\n".join(tb))
        evidence = err
    else:  # the main process itself touched a truncated /dev/shm mapping
        s.exits[r] = Exit(t, -7)
        evidence = "exitcode  : -7"
    propagate(s, t, [r])
    label(s, "sigbus_dev_shm_exhausted_container", r, job.host(node), evidence, "/dev/shm exhausted (SIGBUS)", True)


def ib_link_down(s: Story) -> None:
    job, rng = s.job, s.job.rng
    t = warmup(s)
    node = rng.choice(job.nodes)
    present = rng.random() < 0.7
    # torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/en_main.c: mlx5e_update_carrier -> 'Link down'
    link = f"mlx5_core 0000:{rng.choice(['0c', '1a', '4b', '8d'])}:00.0 ibp12s0: Link down"
    if present:
        s.kmsg(node, t, F.dmesg(node, t, link, rng.random() < 0.5))
    local = job.ranks_on(node)
    for r in local:
        if job.nccl_debug:
            # NVIDIA/nccl src/transport/net_ib.cc: ncclIbAsyncThreadMain ('NET/IB : %s:%d Got async event : %s',
            # the text from rdma-core libibverbs/enum_strs.c: ibv_event_type_str(IBV_EVENT_PORT_ERR))
            s.emit(r, t + 0.01, F.nccl_warn(job, r, "transport/net_ib.cc:101", "NET/IB : mlx5_0:1 Got async event "
                                                                               ": port error"))
    # both ends of every QP that crosses the dead link see their work requests fail once the retries run out
    hit = set(local)
    for r in local:
        hit.update({(r - job.nproc) % job.world, (r + job.nproc) % job.world})
    for r in sorted(hit):
        other = (r + job.nproc) % job.world if r in local else local[0]
        onode, _ = job.by_rank(other)
        tr = t + rng.uniform(4, 9)
        old = job.nccl_version < "2.19"
        # net_ib.cc: ncclIbTest: '<= 2.18 ... with error %d, opcode %d, len %d, vendor err %d (%s)'; 2.19+ 'with
        # status=%d opcode=%d len=%d vendor err %d (%s)'
        detail = ("with error 12, opcode 0, len 0, vendor err 129 (Send)" if old
                  else "with status=12 opcode=0 len=0 vendor err 129 (Send)")
        warn = f"NET/IB : Got completion from peer {onode.ip}<{rng.randint(40000, 60000)}> {detail}"
        rows = [F.nccl_warn(job, r, "transport/net_ib.cc:1909", warn)] if job.nccl_debug else []
        what = (f"NCCL error: remote process exited or there was a network error, NCCL version {job.nccl_version}\n"
                "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                f"prematurely.\nLast error:\n{warn}")
        rows += teardown(s, r, tr, what, "checkForNCCLErrorsInternal at ../torch/csrc/distributed/c10d/NCCLUtils.cpp:"
                                         "212")
        s.emit(r, tr, rows)
        s.exits[r] = Exit(tr + 0.5, -6)
    propagate(s, t, [], neighbours=False)
    label(s, "nccl_ib_completion_error", None, job.host(node), link if present else "Got completion from peer",
          f"InfiniBand link down on {node.short}", present)


def node_loss(s: Story) -> None:
    """The host that runs rank 0 and the c10d store goes away (kernel panic, power): its logs just stop."""
    job, rng = s.job, s.job.rng
    t = warmup(s)
    node = next(n for n in job.nodes if n.node_rank == 0)
    s.dead_nodes.add(node.index)
    for r in job.ranks_on(node):
        s.exits[r] = Exit(t, -9)
    store = f"[{node.short}]:29500"
    for r in range(job.world):
        n2, _ = job.by_rank(r)
        if n2 is node or rng.random() < 0.5 or not job.torch_new:  # the store-polling heartbeat is torch >= 2.3
            continue
        tr = t + rng.uniform(1, 30)
        # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: HeartbeatMonitor::runLoop when the store is unreachable
        s.emit(r, tr, F.c10(job, r, tr, "W", "ProcessGroupNCCL.cpp:1662", f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                            "Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut "
                            "down too early), with error: Connection reset by peer"))
        if rng.random() < 0.3:
            sock = f"fd={rng.randint(40, 200)}, addr=[{n2.short}]:{rng.randint(33000, 60000)}, remote={store}"
            s.emit(r, tr, F.c10(job, r, tr, "W", "TCPStore.cpp:125",
                                f"[c10d] recvValue failed on SocketImpl({sock}): Connection reset by peer"))
    for n2 in job.nodes:
        if n2 is node:
            continue
        ta = t + rng.uniform(5, 60)
        # torch/distributed/elastic/rendezvous/dynamic_rendezvous.py: _keep_alive's warning
        s.say(n2, ta, F.agent(job, n2, ta, "W", "torch.distributed.elastic.rendezvous.dynamic_rendezvous", 1283,
                              f"The node '{n2.short}_{job.agent_pid[n2.index]}_0' has failed to send a keep-alive "
                              f"heartbeat to the rendezvous '{job.job_id}' due to an error of type "
                              "RendezvousConnectionError."))
    if job.style in ("slurm_torchrun", "srun_direct"):
        # SchedMD/slurm src/srun/srun_job.c / step_launch.c: 'Node failure on %s'; slurmstepd's CANCELLED banner
        s.sched.append((t + 310, f"srun: error: Node failure on {node.short}"))
        s.sched.append((t + 311, f"slurmstepd: error: *** JOB {job.slurm_id} ON {job.nodes[0].short} CANCELLED AT "
                                 f"{F.slurm_time(t + 311)} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"))
    if job.style.startswith("k8s"):
        s.pods[node.index] = {"reason": "NodeLost", "code": 137, "event": ("Warning", "NodeNotReady",
                                                                           "Node is not ready")}
    propagate(s, t, job.ranks_on(node), host_gone=True)
    label(s, "node_loss_peer_processes_killed", 0, job.host(node), "Failed to check the \"should dump\" flag on "
          "TCPStore", f"{node.short} (rank 0, c10d store) went down", True)
