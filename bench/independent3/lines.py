"""Message templates. Each function names the upstream file whose format it follows (see README.md).

Functions return text without any launcher prefix; layouts add `[defaultN]:`, `NN: `, `[pod/...]` etc.
Multi-line messages are returned as one string with embedded newlines.
"""

from __future__ import annotations

import zlib

from . import topo

NCCL_VERSIONS = ["2.20.5", "2.21.5", "2.21.5", "2.22.3"]
TORCH_NEW = "2.5.1"  # c10 MessageLogger with `[rankN]:` prefix and nanosecond stamps
TORCH_OLD = "2.1.2"  # `[E ProcessGroupNCCL.cpp:475]` without date and rank prefix


# ---------------------------------------------------------------- c10 / ProcessGroupNCCL
# pytorch/pytorch c10/util/Logging.cpp (MessageLogger; `[rankN]:` prepended once the rank is known, torch >= 2.3)
# and torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (watchdog, checkTimeout, teardown banner).


def c10(new: bool, rank: int, t: float, sev: str, where: str, msg: str) -> str:
    if new:
        return f"[rank{rank}]:[{topo.glog(t, sev)} {where}] {msg}"
    return f"[{sev} {where}] {msg}"


def pg_tag(rank: int, new: bool) -> str:
    return f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]" if new else f"[Rank {rank}]"


def work_desc(seq: int, op: str, numel: int, timeout_ms: int) -> str:
    return f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout_ms})"


def watchdog_timeout(
    new: bool,
    rank: int,
    t: float,
    seq: int,
    op: str,
    numel: int,
    timeout_ms: int,
    last_enq: int,
    last_done: int,
    libdir: str,
) -> list[tuple[float, str]]:
    """ProcessGroupNCCL.cpp: WorkNCCL::checkTimeout, ProcessGroupNCCL::watchdogHandler, the abort path."""
    ran = timeout_ms + int((t * 1000) % 97) + 3
    timeout = (
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work_desc(seq, op, numel, timeout_ms)} "
        f"ran for {ran} milliseconds before timing out."
    )
    out = [(t, c10(new, rank, t, "E", "ProcessGroupNCCL.cpp:632" if new else "ProcessGroupNCCL.cpp:475", timeout))]
    if new:
        out.append(
            (
                t + 0.0002,
                c10(
                    new,
                    rank,
                    t + 0.0002,
                    "E",
                    "ProcessGroupNCCL.cpp:2271",
                    f"{pg_tag(rank, new)} failure detected by watchdog at work sequence id: {seq} "
                    f"PG status: last enqueued work: {last_enq}, last completed work: {last_done}",
                ),
            )
        )
        out.append(
            (
                t + 0.0003,
                c10(
                    new,
                    rank,
                    t + 0.0003,
                    "E",
                    "ProcessGroupNCCL.cpp:2306",
                    f"{pg_tag(rank, new)} Timeout at NCCL work: {seq}, last enqueued NCCL work: "
                    f"{last_enq}, last completed NCCL work: {last_done}.",
                ),
            )
        )
    out.append(
        (
            t + 0.0004,
            c10(
                new,
                rank,
                t + 0.0004,
                "E",
                "ProcessGroupNCCL.cpp:1834" if new else "ProcessGroupNCCL.cpp:489",
                "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
                "kernels, subsequent GPU operations might run on corrupted/incomplete data.",
            ),
        )
    )
    out.append(
        (
            t + 0.0005,
            c10(
                new,
                rank,
                t + 0.0005,
                "E",
                "ProcessGroupNCCL.cpp:1840" if new else "ProcessGroupNCCL.cpp:495",
                "To avoid data inconsistency, we are taking the entire process down.",
            ),
        )
    )
    what = f"{pg_tag(rank, new)} Process group watchdog thread terminated with exception: {timeout}"
    out.append(
        (
            t + 0.0008,
            c10(new, rank, t + 0.0008, "E", "ProcessGroupNCCL.cpp:1595" if new else "ProcessGroupNCCL.cpp:916", what),
        )
    )
    out.append(
        (
            t + 0.001,
            abort_block(
                what, "checkTimeout", "ProcessGroupNCCL.cpp:634" if new else "ProcessGroupNCCL.cpp:477", libdir
            ),
        )
    )
    return out


def abort_block(what: str, fn: str, where: str, libdir: str) -> str:
    """std::terminate on an escaping c10::DistBackendError (libstdc++ verbose terminate handler + c10 backtrace)."""
    return "\n".join(
        [
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {what}",
            f"Exception raised from {fn} at ../torch/csrc/distributed/c10d/{where} (most recent call first):",
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 "
            f"(0x7f3a1c96b446 in {libdir}/libc10.so)",
            f"frame #1: c10d::ProcessGroupNCCL::WorkNCCL::{fn}("
            "std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) "
            f"+ 0x1d2 (0x7f3a1dc6e772 in {libdir}/libtorch_cuda.so)",
            "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 "
            f"(0x7f3a1dc75bb3 in {libdir}/libtorch_cuda.so)",
            "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d "
            f"(0x7f3a1dc7761d in {libdir}/libtorch_cuda.so)",
            "frame #4: <unknown function> + 0xdc253 (0x7f3a6a8b0253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
            "frame #5: <unknown function> + 0x94ac3 (0x7f3a6ca94ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
            "frame #6: <unknown function> + 0x126850 (0x7f3a6cb26850 in /lib/x86_64-linux-gnu/libc.so.6)",
            "",
        ]
    )


def watchdog_exception(new: bool, rank: int, t: float, inner: str, libdir: str) -> list[tuple[float, str]]:
    """Watchdog thread sees an async NCCL/CUDA error on its own work and takes the process down."""
    what = f"{pg_tag(rank, new)} Process group watchdog thread terminated with exception: {inner}"
    return [
        (t, c10(new, rank, t, "E", "ProcessGroupNCCL.cpp:1595" if new else "ProcessGroupNCCL.cpp:916", what)),
        (
            t + 0.001,
            abort_block(
                what,
                "checkForNCCLErrors" if "NCCL" in inner else "finishedGPUExecutionInternal",
                "NCCLUtils.hpp:317" if "NCCL" in inner else "ProcessGroupNCCL.cpp:616",
                libdir,
            ),
        ),
    ]


def nccl_remote_error(nccl_ver: str, last_error: str) -> str:
    """torch/csrc/distributed/c10d/NCCLUtils.cpp getNcclErrorDetailStr for ncclRemoteError (+ NCCL's last WARN)."""
    return (
        f"NCCL error: remote process exited or there was a network error, NCCL version {nccl_ver}\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
        f"Last error:\n{last_error}"
    )


def dump_signal_msg(rank: int, src: int, enq: int, done: int) -> str:
    return (
        f"{pg_tag(rank, True)} Received a dump signal due to a collective timeout from  rank {src} and we will "
        f"try our best to dump the debug info. Last enqueued NCCL work: {enq}, last completed NCCL work: {done}."
    )


def dump_signal(new: bool, rank: int, t: float, src: int, enq: int, done: int) -> str:
    """ProcessGroupNCCL.cpp heartbeat monitor: another rank asked everyone to dump the flight recorder."""
    return c10(
        new,
        rank,
        t,
        "E",
        "ProcessGroupNCCL.cpp:1386",
        dump_signal_msg(rank, src, enq, done)
        + "This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, "
        "the order of collectives is not same for all ranks or the scheduled collective, for some reason, "
        "didn't run. Additionally, this can be caused by GIL deadlock or other reasons such as network errors "
        "or bugs in the communications library (e.g. NCCL), etc. ",
    )


def fr_dump_written(new: bool, rank: int, t: float, path: str) -> str:
    """ProcessGroupNCCL.cpp / NCCLUtils DebugInfoWriter::write."""
    return c10(
        new,
        rank,
        t,
        "I",
        "NCCLUtils.cpp:350" if new else "NCCLUtils.cpp:223",
        f"{pg_tag(rank, new)} ProcessGroupNCCL dumping nccl trace to {path}",
    )


# ---------------------------------------------------------------- CUDA / Python exceptions
# c10/cuda/CUDAException.cpp c10_cuda_check_implementation; c10/cuda/CUDACachingAllocator.cpp (OOM text, torch >= 2.2)

CUDA_TAIL = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
    "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)


def cuda_error(msg: str) -> str:
    return f"CUDA error: {msg}\n{CUDA_TAIL}"


def cuda_oom(dev: int, want_gib: float, total: float, free_gib: float) -> str:
    used = total - free_gib
    alloc = used * 0.93
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {want_gib:.2f} GiB. GPU {dev} has a total "
        f"capacity of {total:.2f} GiB of which {free_gib * 1024:.2f} MiB is free. Including non-PyTorch memory, "
        f"this process has {used:.2f} GiB memory in use. Of the allocated memory {alloc:.2f} GiB is allocated by "
        f"PyTorch, and {used - alloc - 0.4:.2f} GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def traceback(frames: list[tuple[str, int, str, str]], exc: str) -> str:
    """CPython traceback.print_exception layout."""
    out = ["Traceback (most recent call last):"]
    for f, ln, fn, src in frames:
        out.append(f'  File "{f}", line {ln}, in {fn}')
        if src:
            out.append(f"    {src}")
    out.append(exc)
    return "\n".join(out)


# torch/csrc/DataLoader.cpp SIGBUS handler text, torch/utils/data/dataloader.py _MultiProcessingDataLoaderIter
SHM_BUS = (
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
)


def dataloader_killed(pid: int) -> str:
    return (
        f"RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory. Please try to raise your shared memory limit."
    )


# ---------------------------------------------------------------- NCCL (src/debug.cc ncclDebugLog, v2.19-2.22)


def nccl(host: str, pid: int, tid: int, dev: int, msg: str, warn_where: str | None = None) -> str:
    if warn_where:
        return f"{host}:{pid}:{tid} [{dev}] {warn_where} NCCL WARN {msg}"
    return f"{host}:{pid}:{tid} [{dev}] NCCL INFO {msg}"


def nccl_init_lines(
    host, pid, tid, dev, rank, world, ip, iface, nccl_ver, bus, comm, ib: bool, first: bool
) -> list[str]:
    """init.cc (showVersion on rank 0, Init COMPLETE), bootstrap.cc, transport/net_ib.cc / net_socket.cc (Using)."""
    out = []
    if first:
        out.append(f"NCCL version {nccl_ver}+cuda12.4")
    out.append(nccl(host, pid, tid, dev, f"Bootstrap : Using {iface}:{ip}<0>"))
    out.append(nccl(host, pid, tid, dev, "cudaDriverVersion 12040"))
    if ib:
        out.append(
            nccl(
                host,
                pid,
                tid,
                dev,
                f"NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB [2]mlx5_4:1/IB [3]mlx5_5:1/IB ; OOB {iface}:{ip}<0>",
            )
        )
        out.append(nccl(host, pid, tid, dev, "Using network IB"))
    else:
        out.append(nccl(host, pid, tid, dev, f"NET/Socket : Using [0]{iface}:{ip}<0>"))
        out.append(nccl(host, pid, tid, dev, "Using network Socket"))
    out.append(
        nccl(
            host,
            pid,
            tid,
            dev,
            f"comm {comm} rank {rank} nranks {world} cudaDev {dev} nvmlDev {dev} "
            f"busId {bus}000 commId 0x{zlib.crc32(comm.encode()):08x}{zlib.crc32(comm[::-1].encode()):08x} "
            "- Init COMPLETE",
        )
    )
    return out


def ib_completion(peer_ip: str, port: int, status: int, local_gid: str, remote_gid: str, vendor: int) -> str:
    """transport/net_ib.cc ncclIbTest, v2.19-2.22 format."""
    return (
        f"NET/IB : Got completion from peer {peer_ip}<{port}> with status={status} opcode=0 len=0 vendor err "
        f"{vendor} (Recv) localGid ::ffff:{local_gid} remoteGid ::ffff:{remote_gid}"
    )


def ib_async(dev: str, port: int, what: str) -> str:
    """transport/net_ib.cc ncclIbAsyncThreadMain, v2.21 format."""
    return f"NET/IB : {dev}:{port} Got async event : {what}"


def socket_closed(peer_ip: str, port: int) -> str:
    """misc/socket.cc socketProgressOpt / socketProgress (v2.19-2.22)."""
    return f"socketProgress: Connection closed by remote peer {peer_ip}<{port}>"


def socket_reset(peer_ip: str, port: int) -> str:
    return f"socketProgressOpt: Call to recv from {peer_ip}<{port}> failed : Connection reset by peer"


# ---------------------------------------------------------------- kernel
# torvalds/linux mm/oom_kill.c (dump_header, __oom_kill_process), kernel/hung_task.c (check_hung_task),
# drivers/pci/pcie/aer.c (aer_print_port_info, aer_print_error), drivers/net/ethernet/mellanox/mlx5/core/en_main.c
# (mlx5e_update_carrier -> netdev_info "Link up"/"Link down"), fs/nfs/client.c / sunrpc
# (nfs: server ... not responding). NVIDIA/open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/kernel_rc.c
# (NVRM: Xid (PCI:...): N, pid=..., name=..., msg)


def xid(bus: str, code: int, pid: str, name: str, msg: str) -> str:
    return f"NVRM: Xid (PCI:0000:{bus}:00): {code}, pid={pid}, name={name}, {msg}"


def oom_lines(comm: str, pid: int, rss_kb: int, cgroup: bool, memcg: str, uid: int = 1000) -> list[str]:
    head = "Memory cgroup out of memory" if cgroup else "Out of memory"
    scope = f"oom_memcg={memcg},task_memcg={memcg}" if cgroup else f"global_oom,task_memcg={memcg}"
    return [
        f"{comm} invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
        f"CPU: 41 PID: {pid + 3} Comm: {comm} Tainted: P           OE     5.15.0-1053-nvidia #54-Ubuntu",
        "Mem-Info:",
        f"oom-kill:constraint=CONSTRAINT_{'MEMCG' if cgroup else 'NONE'},nodemask=(null),cpuset=/,mems_allowed=0-1,"
        f"{scope},task={comm},pid={pid},uid={uid}",
        f"{head}: Killed process {pid} ({comm}) total-vm:{rss_kb * 3 // 2}kB, anon-rss:{rss_kb}kB, "
        f"file-rss:{rss_kb // 97}kB, shmem-rss:{rss_kb // 301}kB, UID:{uid} pgtables:{rss_kb // 450}kB oom_score_adj:0",
        f"oom_reaper: reaped process {pid} ({comm}), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    ]


def hung_task(comm: str, pid: int, secs: int, ppid: int) -> list[str]:
    return [
        f"INFO: task {comm}:{pid} blocked for more than {secs} seconds.",
        "      Tainted: P           OE     5.15.0-1053-nvidia #54-Ubuntu",
        '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        f"task:{comm:<15} state:D stack:0     pid:{pid:<5} ppid:{ppid:<6} flags:0x00004002",
        "Call Trace:",
        " <TASK>",
        " __schedule+0x2cb/0x6f0",
        " schedule+0x63/0x110",
        " rpc_wait_bit_killable+0x1d/0x90 [sunrpc]",
        " nfs_wait_on_request+0x2c/0x40 [nfs]",
        " nfs_file_fsync+0x4a/0x1b0 [nfs]",
        " </TASK>",
    ]


def aer_lines(root: str, bus: str) -> list[str]:
    return [
        f"pcieport 0000:{root}:01.0: AER: Uncorrected (Fatal) error received: 0000:{bus}:00.0",
        f"nvidia 0000:{bus}:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Inaccessible, "
        "(Unregistered Agent ID)",
        f"pcieport 0000:{root}:01.0: AER: Root Port link has been reset",
    ]


# ---------------------------------------------------------------- Slurm (SchedMD/slurm)
# src/srun/launch.c (task exit lines), src/api/step_launch.c (Node failure, Job step aborted),
# src/slurmd/slurmstepd/req.c (CANCELLED banners), src/common/write_labelled_message.c (`%0*d: ` labels)


def srun_exit(host: str, tasks: list[int], code: int) -> str:
    ids = _ranges(tasks)
    word = "task" if len(tasks) == 1 else "tasks"
    if code > 0:
        return f"srun: error: {host}: {word} {ids}: Exited with exit code {code}"
    sig = {-9: "Killed", -15: "Terminated", -6: "Aborted", -7: "Bus error", -11: "Segmentation fault"}.get(
        code, "Killed"
    )
    return f"srun: error: {host}: {word} {ids}: {sig}"


def _ranges(xs: list[int]) -> str:
    xs = sorted(xs)
    parts, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


def stepd_cancel(what: str, host: str, t: float, reason: str | None) -> str:
    tail = {
        None: "",
        "TIME": " DUE TO TIME LIMIT",
        "PREEMPT": " DUE TO PREEMPTION",
        "NODE": " DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS",
    }[reason]
    return f"slurmstepd: error: *** {what} ON {host} CANCELLED AT {topo.slurm_ts(t)}{tail} ***"


# ---------------------------------------------------------------- torch.distributed.elastic
# torch/distributed/elastic/agent/server/api.py (_invoke_run, _restart_workers), multiprocessing/api.py
# (PContext._close "Sending process %s closing signal %s", SubprocessContext), local_elastic_agent.py,
# errors/__init__.py ChildFailedError.format_msg, errors/error_handler.py (error.json)


def elastic(new: bool, t: float, sev: str, pid: int, module: str, line: int, msg: str) -> str:
    path = "torch/distributed/" + (module if module == "run.py" else "elastic/" + module)
    if new:
        return f"[{topo.glog_us(t, sev[0])} {pid} site-packages/{path}:{line}] {msg}"
    lvl = {"I": "INFO", "W": "WARNING", "E": "ERROR"}[sev[0]]
    return f"{lvl}:{path[:-3].replace('/', '.')}:{msg}"


def child_failed_table(script: str, failures: list[dict], root: dict) -> str:
    def block(idx: int, f: dict) -> list[str]:
        tb = f.get("traceback") or f"Signal {-f['code']} ({_signame(f['code'])}) received by PID {f['pid']}"
        if f["code"] > 0 and not f.get("traceback"):
            tb = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
        return [
            f"[{idx}]:",
            f"  time      : {topo.elastic_table_ts(f['t_wall'])}",
            f"  host      : {f['host']}",
            f"  rank      : {f['rank']} (local_rank: {f['local']})",
            f"  exitcode  : {f['code']} (pid: {f['pid']})",
            f"  error_file: {f.get('error_file') or '<N/A>'}",
            f"  traceback : {tb}",
        ]

    bar = "=" * 60
    out = [bar, f"{script} FAILED", "-" * 60, "Failures:"]
    if failures:
        for i, f in enumerate(failures, 1):
            out += block(i, f)
    else:
        out.append("  <NO_OTHER_FAILURES>")
    out += ["-" * 60, "Root Cause (first observed failure):", *block(0, root), bar]
    return "\n".join(out)


def _signame(code: int) -> str:
    return {-9: "SIGKILL", -15: "SIGTERM", -6: "SIGABRT", -7: "SIGBUS", -11: "SIGSEGV"}.get(code, "SIGKILL")


def elastic_main_tb(launcher: str) -> str:
    """torch/distributed/run.py main -> elastic_launch.__call__ -> launch_agent raising ChildFailedError."""
    py = "/usr/local/lib/python3.10/dist-packages"
    if launcher == "accelerate":  # huggingface/accelerate commands/accelerate_cli.py, commands/launch.py
        frames = [
            ("/usr/local/bin/accelerate", 8, "<module>", "sys.exit(main())"),
            (f"{py}/accelerate/commands/accelerate_cli.py", 48, "main", "args.func(args)"),
            (f"{py}/accelerate/commands/launch.py", 1159, "launch_command", "multi_gpu_launcher(args)"),
            (f"{py}/accelerate/commands/launch.py", 793, "multi_gpu_launcher", "distrib_run.run(args)"),
        ]
    else:
        frames = [
            (f"/usr/local/bin/{launcher}", 8, "<module>", "sys.exit(main())"),
            (
                f"{py}/torch/distributed/elastic/multiprocessing/errors/__init__.py",
                355,
                "wrapper",
                "return f(*args, **kwargs)",
            ),
            (f"{py}/torch/distributed/run.py", 919, "main", "run(args)"),
        ]
    frames += [
        ("/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", 910, "run", "elastic_launch("),
        (
            "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py",
            138,
            "__call__",
            "return launch_agent(self._config, self._entrypoint, list(args))",
        ),
        (
            "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py",
            269,
            "launch_agent",
            "raise ChildFailedError(",
        ),
    ]
    return traceback(frames, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ")
