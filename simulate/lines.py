"""Message formats, as NCCL, PyTorch, torchrun, the kernel and Slurm print them.

The wording follows the catalog's verified examples (catalog/signatures/*.yaml) and the real logs of the
corpus; every function takes the true time and prints the host's skewed clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from simulate.cluster import Cluster, ctime, glog, std

NCCL_VERSION = "2.21.5"
PY = "/usr/local/lib/python3.11/dist-packages"


def head(c: Cluster, r: int, tid_off: int = 57) -> str:
    pid = c.pids[r]
    return f"{c.host(r)}:{pid}:{pid + tid_off} [{c.local(r)}]"


def nccl_init(c: Cluster, r: int, ifname: str = "eth0", addr: str | None = None, ib: bool = False) -> list[str]:
    h, loc = head(c, r), c.local(r)
    addr = addr or c.ip(r)
    lines = [f"{h} NCCL INFO Bootstrap : Using {ifname}:{addr}<0>",
             f"{h} NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"]
    if ib:
        lines += [f"{h} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:{c.ib_ip(r)}<0>",
                  f"{h} NCCL INFO Using network IB"]
    else:
        lines += [f"{h} NCCL INFO NET/Socket : Using [0]{ifname}:{addr}<0>", f"{h} NCCL INFO Using network Socket"]
    lines.append(f"{h} NCCL INFO comm 0x{0x55D0C0000000 + r * 4096:x} rank {r} nranks {c.world_size} cudaDev {loc} "
                 f"nvmlDev {loc} busId {c.bus(r):x}000 commId 0x6b3f0c9e1d2a4f10 - Init COMPLETE")
    return lines


def training(c: Cluster, r: int, steps: int, until: datetime) -> list[tuple[datetime, str]]:
    out = []
    for s in range(steps):
        t = until - timedelta(seconds=(steps - s) * 2.1)
        loss = 2.9 - 0.0004 * s + c.rng.uniform(-0.02, 0.02)
        out.append((t, f"[{std(c.clock(r, t))}] [INFO] [rank{r}] step {4800 + s} loss {loss:.4f} lr 3.0e-04 "
                       f"grad_norm {c.rng.uniform(0.8, 1.3):.3f} tokens/s 41{c.rng.randrange(100, 999)}"))
    return out


def work(seq: int, op: str = "ALLREDUCE") -> str:
    return f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=25165824, NumelOut=25165824, Timeout(ms)=600000)"


def watchdog(c: Cluster, r: int, t: datetime, seq: int, enqueued: int | None = None,
             completed: int | None = None) -> list[str]:
    """A rank whose collective #seq timed out: the watchdog lines and the teardown banner."""
    g, p, pg = glog(c.clock(r, t)), f"[rank{r}]:", f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
    ran = 600000 + c.rng.randrange(10, 900)
    enq = seq if enqueued is None else enqueued
    done = seq - 1 if completed is None else completed
    timeout = f"[Rank {r}] Watchdog caught collective operation timeout: {work(seq)} ran for {ran} milliseconds " \
              "before timing out."
    return [
        f"{p}[E{g} ProcessGroupNCCL.cpp:632] {timeout}",
        f"{p}[E{g} ProcessGroupNCCL.cpp:2268] {pg}  failure detected by watchdog at work sequence id: {seq} PG "
        f"status: last enqueued work: {enq}, last completed work: {done}",
        f"{p}[E{g} ProcessGroupNCCL.cpp:1834] {pg} Process group watchdog thread terminated with exception: "
        f"{timeout}",
        f"{p}[E{g} ProcessGroupNCCL.cpp:630] [Rank {r}] Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"{p}[E{g} ProcessGroupNCCL.cpp:636] [Rank {r}] To avoid data inconsistency, we are taking the entire "
        "process down.",
    ]


def watchdog_error(c: Cluster, r: int, t: datetime, seq: int, why: str) -> list[str]:
    """A rank whose collective #seq failed with an NCCL error (a peer died): it aborts within seconds."""
    g, p, pg = glog(c.clock(r, t)), f"[rank{r}]:", f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
    return [
        f"{p}[E{g} ProcessGroupNCCL.cpp:2268] {pg}  failure detected by watchdog at work sequence id: {seq} PG "
        f"status: last enqueued work: {seq}, last completed work: {seq - 1}",
        f"{p}[E{g} ProcessGroupNCCL.cpp:1595] {pg} Process group watchdog thread terminated with exception: "
        f"NCCL error: {why}, NCCL version {NCCL_VERSION}",
        f"{p}[E{g} ProcessGroupNCCL.cpp:630] [Rank {r}] Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
    ]


REMOTE = "remote process exited or there was a network error"


def reset_by_peer(c: Cluster, r: int, peer_ip: str, port: int) -> str:
    return (f"{head(c, r, 61)} misc/socket.cc:538 NCCL WARN socketProgressOpt: Call to recv from {peer_ip}<{port}> "
            "failed : Connection reset by peer")


def closed_by_peer(c: Cluster, r: int, peer_ip: str, port: int) -> str:
    return f"{head(c, r, 61)} misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer " \
           f"{peer_ip}<{port}>"


def ib_completion(c: Cluster, r: int, peer_ip: str, port: int, status: int = 12) -> str:
    vendor = {12: 129, 5: 249}.get(status, 0)
    return (f"{head(c, r, 83)} transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer "
            f"{peer_ip}<{port}> with status={status} opcode=0 len=0 vendor err {vendor} (Recv)")


def ib_port_error(c: Cluster, r: int) -> str:
    return f"{head(c, r, 90)} transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error"


def nccl_error(c: Cluster, r: int, why: str, last: str) -> list[str]:
    p = f"[rank{r}]:"
    return [f"{p} torch.distributed.DistBackendError: NCCL error in: {PY}/torch/csrc/distributed/c10d/"
            f"ProcessGroupNCCL.cpp:2027, {why}, NCCL version {NCCL_VERSION}",
            f"{p} ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
            "error. It can be also caused by unexpected exit of a remote peer, you can check NCCL warnings for "
            "failure reason and see if there is connection closure by a peer.",
            f"{p} Last error:", f"{p} {last}"]


def connect_failed(c: Cluster, r: int, addr: str, port: int, why: str) -> str:
    return f"{head(c, r, 0)} misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to {addr}<{port}> failed : {why}"


def traceback(r: int, frames: list[tuple[str, str]], error: str) -> list[str]:
    p = f"[rank{r}]:"
    out = [f"{p} Traceback (most recent call last):"]
    for where, code in frames:
        out += [f'{p}   File "{where}', f"{p}     {code}"]
    return [*out, f"{p} {error}"]


TRAIN_FRAMES = [('/workspace/train/main.py", line 412, in <module>', "main()"),
                ('/workspace/train/main.py", line 388, in main', "trainer.fit()"),
                ('/workspace/train/loop.py", line 74, in fit', "loss.backward()")]
SETUP_FRAMES = [('/workspace/train/main.py", line 412, in <module>', "main()"),
                ('/workspace/train/main.py", line 377, in main', "dataset = load_shards(cfg.data)"),
                ('/workspace/train/data.py", line 58, in load_shards', "return [open_shard(p) for p in paths]")]


def cuda_oom(c: Cluster, r: int) -> list[str]:
    return traceback(r, TRAIN_FRAMES, (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {c.local(r)} has a total "
        f"capacity of 79.15 GiB of which 1.{c.rng.randrange(10, 99)} GiB is free. Process {c.pids[r]} has 78.07 GiB "
        "memory in use. Of the allocated memory 74.12 GiB is allocated by PyTorch, and 2.31 GiB is reserved by "
        "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."))


def cuda_error(r: int, what: str) -> list[str]:
    p = f"[rank{r}]:"
    return [*traceback(r, TRAIN_FRAMES, f"RuntimeError: CUDA error: {what}"),
            f"{p} CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
            "below might be incorrect.",
            f"{p} For debugging consider passing CUDA_LAUNCH_BLOCKING=1"]


def watchdog_cuda_error(c: Cluster, r: int, t: datetime, what: str) -> str:
    return (f"[rank{r}]:[E{glog(c.clock(r, t))} ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
            f"Process group watchdog thread terminated with exception: CUDA error: {what}")


def dmesg_oom(c: Cluster, r: int, t: datetime) -> list[str]:
    stamp, pid = ctime(c.clock(r, t)), c.pids[r]
    return [
        f"{stamp} python invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), "
        "order=0, oom_score_adj=0",
        f"{stamp} oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
        f"task_memcg=/slurm/uid_1000/job_88123/step_0,task=python,pid={pid},uid=1000",
        f"{stamp} Out of memory: Killed process {pid} (python) total-vm:912345678kB, anon-rss:498765432kB, "
        "file-rss:81234kB, shmem-rss:0kB, UID:1000 pgtables:987654kB oom_score_adj:0",
    ]


def dmesg_xid(c: Cluster, r: int, t: datetime, xid: int) -> list[str]:
    stamp, pci = ctime(c.clock(r, t)), f"0000:{c.bus(r):02x}:00"
    if xid == 79:
        return [f"{stamp} NVRM: Xid (PCI:{pci}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
                f"{stamp} NVRM: GPU {pci}.0: GPU has fallen off the bus."]
    return [f"{stamp} NVRM: Xid (PCI:{pci}): 48, pid={c.pids[r]}, name=python, An uncorrectable double bit error "
            "(DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."]


def dmesg_segfault(c: Cluster, r: int, t: datetime) -> str:
    return (f"{ctime(c.clock(r, t))} pt_main_thread[{c.pids[r]}]: segfault at 7f1200000010 ip 00007f13aa21f7c4 "
            "sp 00007f12f8ffd3e0 error 6 in libtorch_cuda.so[7f13a6000000+4e000000]")


def dmesg_noise(c: Cluster, r: int, t: datetime) -> str:
    return f"{ctime(c.clock(r, t))} mlx5_core 0000:3b:00.0: mlx5_cmd_check:810: ... (syndrome (0x0))"


def agent(c: Cluster, node: int, first: int, code: int, why: str, t: datetime) -> list[str]:
    """torchrun on one node: it SIGTERMs the siblings of the first local failure and prints its failure table."""
    g = glog(c.node_clock(node, t))
    api = "torch/distributed/elastic/multiprocessing/api.py"
    out = [f"W{g} 139871 {api}:897] Sending process {c.pids[r]} closing signal SIGTERM"
           for r in c.ranks_on(node) if r != first]
    out += [f"E{g} 139871 {api}:869] failed (exitcode: {code}) local_rank: {c.local(first)} (pid: {c.pids[first]}) "
            "of binary: /usr/bin/python3",
            "Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "=" * 60, "/workspace/train/main.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
            "Root Cause (first observed failure):", "[0]:",
            f"  time      : {c.node_clock(node, t):%Y-%m-%d_%H:%M:%S}", f"  host      : {c.host_name(node)}",
            f"  rank      : {first} (local_rank: {c.local(first)})", f"  exitcode  : {code} (pid: {c.pids[first]})",
            "  error_file: <N/A>", f"  traceback : {why}", "=" * 60]
    return out


SIGNAL_WHY = {-9: "Signal 9 (SIGKILL) received by PID {pid}", -11: "Signal 11 (SIGSEGV) received by PID {pid}",
              -6: "Signal 6 (SIGABRT) received by PID {pid}"}


def why_exit(c: Cluster, r: int, code: int) -> str:
    text = SIGNAL_WHY.get(code, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    return text.format(pid=c.pids[r])


def store_recv_failed(c: Cluster, r: int, t: datetime, master: str) -> list[str]:
    p = f"[rank{r}]:"
    msg = "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?"
    return [f"{p}[W{glog(c.clock(r, t))} TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=62, "
            f"addr=[{c.host(r)}]:{45000 + r}, remote=[{master}]:29500): {msg}",
            f"{p} torch.distributed.DistNetworkError: {msg}"]


def store_wait_timeout(r: int) -> str:
    return f"[rank{r}]: torch.distributed.DistStoreError: wait timeout after 600000ms, keys: /default_pg/0//cuda//0"


def store_clients_timeout(joined: int, total: int) -> str:
    return (f"[rank0]: torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
            f"{joined}/{total} clients joined.")


def dump_signal(c: Cluster, r: int, t: datetime, enqueued: int, completed: int, origin: int) -> list[str]:
    g, pg = glog(c.clock(r, t)), f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
    return [f"[rank{r}]:[E{g} ProcessGroupNCCL.cpp:1684] {pg} Received a dump signal due to a collective timeout "
            f"from rank {origin} and we will try our best to dump the debug info. Last enqueued NCCL work: "
            f"{enqueued}, last completed NCCL work: {completed}.This is most likely caused by incorrect usages of "
            "collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for all ranks "
            "or the scheduled collective, for some reason, didn't run. Additionally, this can be caused by GIL "
            "deadlock or other reasons such as network errors or bugs in the communications library (e.g. NCCL), "
            "etc."]


def desync_report(c: Cluster, r: int, t: datetime, lagging: list[int], seq: int) -> list[str]:
    g, p = glog(c.clock(r, t)), f"[rank{r}]:"
    ranks = ", ".join(str(x) for x in lagging)
    return [f"{p}[E{g} ProcessGroupNCCL.cpp:1125] [PG ID 0 PG GUID 0(default_pg) Rank {r}] ",
            f"{p}         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
            f"{p}         - [{ranks}] finished collective #{seq - 1}, but didn't join collective #{seq} "
            "(count from 1)"]


def slurm_node_failure(host: str, job: int, batch_host: str, t: datetime) -> list[str]:
    return [f"srun: error: Node failure on {host}",
            f"slurmstepd: error: *** STEP {job}.0 ON {batch_host} CANCELLED AT {t:%Y-%m-%dT%H:%M:%S} DUE TO NODE "
            "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."]


def missing_shard(r: int) -> list[str]:
    return traceback(r, SETUP_FRAMES, f"FileNotFoundError: [Errno 2] No such file or directory: "
                                      f"'/data/shards/train-{r:05d}.arrow'")


def uncatalogued(r: int, step: int) -> list[str]:
    """A failure no catalog entry knows: the project's own checker aborting the run."""
    p = f"[rank{r}]:"
    return [f"{p} trainer.integrity: shard /data/shards/train-{r:05d}.arrow block 0x7f3a10 digest 9f3ac1d2 "
            "disagrees with manifest 77be02aa",
            f"{p} trainer.integrity: fatal: aborting at step {step} after 3 failed re-reads"]


def noise(c: Cluster, r: int, t: datetime, kind: int) -> str:
    """Harmless lines real jobs print that look like failures: store retries at start-up, skipped samples."""
    if kind == 0:  # rank 0's store is not up yet: the client retries, and succeeds
        return (f"[rank{r}]:[W{glog(c.clock(r, t))} socket.cpp:697] [c10d] The client socket has failed to connect "
                f"to [{c.host(0)}]:29500 (errno: 111 - Connection refused).")
    if kind == 1:
        return (f"[rank{r}]: {PY}/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. It will be removed "
                "in the future and UntypedStorage will be the only storage class.")
    return (f"[rank{r}]: [{std(c.clock(r, t))}] [WARNING] [data] error decoding sample {c.rng.randrange(10**6)} "
            f"(jpeg: premature end of data), skipped")


JOB_WIDE = {
    "no_interface": "{head} bootstrap.cc:85 NCCL WARN Bootstrap : no socket interface found",
    "no_kernel_image": "[rank{r}]: RuntimeError: CUDA error: no kernel image is available for execution on the "
                       "device",
    "ifname_everywhere": "{head} misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.255.0.1<29400> "
                         "failed : Network is unreachable",
}
