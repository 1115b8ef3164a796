"""What a training process prints: PyTorch (c10d, CUDA, the allocator, DCP), NCCL and Python texts, as
(style, text) pairs. `render.py` turns a style into the prefix and stamp of the program that prints it.

Styles: `err` / `out` (plain stderr / stdout), `c10|<sev>|<file:line>` (c10 glog-style line), `nccl|INFO`,
`nccl|WARN|<file:line>` (NCCL's debug logger). Sources are cited beside each template.
"""

from __future__ import annotations

Line = tuple[str, str]


def c10(sev: str, where: str, text: str) -> Line:
    return (f"c10|{sev}|{where}", text)


def pg(rank: int) -> str:
    """ProcessGroupNCCL's log prefix, torch >= 2.3: `[PG ID 0 PG GUID 0(default_pg) Rank N] ` (logPrefix())."""
    return f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] "


# --- CUDA / allocator (c10/cuda/CUDAException.cpp c10_cuda_check_implementation; CUDACachingAllocator.cpp) ----

CUDA_TAIL = ("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
             "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with "
             "`TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


def py_traceback(frames: list[tuple[str, int, str, str]], exc: str) -> list[Line]:
    """CPython's traceback print (Lib/traceback.py format_list): `  File "f", line N, in fn` + source line."""
    out: list[Line] = [("err", "Traceback (most recent call last):")]
    for path, no, fn, src in frames:
        out += [("err", f'  File "{path}", line {no}, in {fn}'), ("err", f"    {src}")]
    return out + [("err", x) for x in exc.rstrip("\n").split("\n")]


def cuda_error_in_step(msg: str, frames: list[tuple[str, int, str, str]]) -> list[Line]:
    """A CUDA error raised by the step: `RuntimeError: CUDA error: <cudaGetErrorString>` (CUDAException.cpp);
    torch >= 2.5 raises torch.AcceleratorError for some, RuntimeError is the long-standing type."""
    return py_traceback(frames, f"RuntimeError: CUDA error: {msg}\n{CUDA_TAIL}")


def cuda_error_in_watchdog(rank: int, msg: str) -> list[Line]:
    """The watchdog thread meets the sticky error on its event query (ProcessGroupNCCL.cpp ncclCommWatchdog:
    `Process group watchdog thread terminated with exception: ` + what(); then std::terminate)."""
    return [
        c10("E", "ProcessGroupNCCL.cpp:1595", f"{pg(rank)}Process group watchdog thread terminated with exception: "
            f"CUDA error: {msg}"),
        ("err", CUDA_TAIL.split("\n")[0]),
        ("err", "terminate called after throwing an instance of 'c10::DistBackendError'"),
        ("err", f"  what():  {pg(rank)}Process group watchdog thread terminated with exception: CUDA error: {msg}"),
        ("err", "Exception raised from c10_cuda_check_implementation at "
                "/pytorch/c10/cuda/CUDAException.cpp:43 (most recent call first):"),
    ]


def cuda_oom(gpu: int, want_gib: float, free_gib: float, used_gib: float) -> str:
    """The caching allocator's OOM text, torch >= 2.2 (CUDACachingAllocator.cpp malloc, `OutOfMemoryError`)."""
    alloc = used_gib - 2.31
    return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {want_gib:.2f} GiB. GPU {gpu} has a "
            f"total capacity of 79.19 GiB of which {free_gib:.2f} GiB is free. Including non-PyTorch memory, this "
            f"process has {used_gib:.2f} GiB memory in use. Of the allocated memory {alloc:.2f} GiB is allocated "
            f"by PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory "
            f"is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            f"documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html"
            f"#environment-variables)")


# --- ProcessGroupNCCL watchdog (ProcessGroupNCCL.cpp WorkNCCL::checkTimeout, watchdogHandler) -------------------

def watchdog_timeout(rank: int, seq: int, op: str, numel: int, timeout_ms: int, ran_ms: int,
                     new_torch: bool) -> list[Line]:
    work = (f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout_ms})")
    if not new_torch:  # torch 2.1: no PG prefix, no status line
        return [c10("E", "ProcessGroupNCCL.cpp:475", f"[Rank {rank}] Watchdog caught collective operation timeout: "
                    f"{work} ran for {ran_ms} milliseconds before timing out."),
                c10("E", "ProcessGroupNCCL.cpp:489", "Some NCCL operations have failed or timed out. Due to the "
                    "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/"
                    "incomplete data."),
                c10("E", "ProcessGroupNCCL.cpp:495", "To avoid data inconsistency, we are taking the entire process "
                    "down."),
                ("err", "terminate called after throwing an instance of 'std::runtime_error'"),
                ("err", f"  what():  [Rank {rank}] Watchdog caught collective operation timeout: {work} ran for "
                        f"{ran_ms} milliseconds before timing out.")]
    return [
        c10("E", "ProcessGroupNCCL.cpp:632", f"{pg(rank)}Watchdog caught collective operation timeout: {work} ran "
            f"for {ran_ms} milliseconds before timing out."),
        c10("E", "ProcessGroupNCCL.cpp:2271", f"{pg(rank)}failure detected by watchdog at work sequence id: {seq} "
            f"PG status: last enqueued work: {seq}, last completed work: {seq - 1}"),
        c10("E", "ProcessGroupNCCL.cpp:670", f"{pg(rank)}Timeout at NCCL work: {seq}, last enqueued NCCL work: "
            f"{seq}, last completed NCCL work: {seq - 1}."),
        c10("E", "ProcessGroupNCCL.cpp:684", f"{pg(rank)}To avoid data inconsistency, we are taking the entire "
            "process down."),
        c10("E", "ProcessGroupNCCL.cpp:1696", f"{pg(rank)}Process group watchdog thread terminated with exception: "
            f"{pg(rank)}Watchdog caught collective operation timeout: {work} ran for {ran_ms} milliseconds before "
            "timing out."),
        ("err", "terminate called after throwing an instance of 'c10::DistBackendError'"),
        ("err", f"  what():  {pg(rank)}Process group watchdog thread terminated with exception: {pg(rank)}Watchdog "
                f"caught collective operation timeout: {work} ran for {ran_ms} milliseconds before timing out."),
    ]


def dump_signal(rank: int, from_rank: int, last_enq: int, last_done: int) -> list[Line]:
    """torch >= 2.4 with TORCH_NCCL_DUMP_ON_TIMEOUT (the flight recorder): every rank is told to dump by the first
    rank that timed out (ProcessGroupNCCL.cpp HeartbeatMonitor / watchdogHandler; `Received a dump signal due to a
    collective timeout from  rank N` has two spaces in the source)."""
    return [c10("E", "ProcessGroupNCCL.cpp:1541", f"{pg(rank)}Received a dump signal due to a collective timeout "
                f"from  rank {from_rank} and we will try our best to dump the debug info. Last enqueued NCCL work: "
                f"{last_enq}, last completed NCCL work: {last_done}.This is most likely caused by incorrect usages "
                "of collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for all "
                "ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be caused "
                "by GIL deadlock or other reasons such as network errors or bugs in the communications library "
                "(e.g. NCCL), etc. ")]


# --- NCCL remote errors (torch NCCLUtils.cpp getNcclErrorDetailStr; nccl transport/net_ib, misc/socket.cc) ------

def ib_completion(peer_ip: str, port: int, hca: str, qp: int) -> str:
    """nccl src/transport/net_ib.cc (2.19-2.23) ncclIbTest: `NET/IB : Got completion from peer %s with status=%d
    opcode=%d len=%d vendor err %d (%s)%s%s%s%s` (status 12 = IBV_WC_RETRY_EXC_ERR)."""
    return (f"NET/IB : Got completion from peer {peer_ip}<{port}> with status=12 opcode=0 len=0 vendor err 129 "
            f"(Send) localGid ::ffff:{hca} remoteGids::ffff:{peer_ip} hca mlx5_{qp}")


def socket_closed(peer_ip: str, port: int) -> str:
    """nccl src/misc/socket.cc socketProgress: `socketProgress: Connection closed by remote peer %s`."""
    return f"socketProgress: Connection closed by remote peer {peer_ip}<{port}>"


def remote_error(rank: int, nccl_version: str, last: str, new_torch: bool) -> list[Line]:
    """A rank whose peer vanished: ProcessGroupNCCL's async error handling raises DistBackendError with
    getNcclErrorDetailStr(ncclRemoteError) (torch/csrc/distributed/c10d/NCCLUtils.cpp)."""
    head = (f"NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, remote process exited or there "
            f"was a network error, NCCL version {nccl_version}")
    body = ["ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            "prematurely.", "Last error:", last]
    if new_torch:
        return [c10("E", "ProcessGroupNCCL.cpp:1899", f"{pg(rank)}Process group watchdog thread terminated with "
                    f"exception: {head}"), ("err", body[0]), ("err", body[1]), ("err", body[2]),
                ("err", "terminate called after throwing an instance of 'c10::DistBackendError'"),
                ("err", f"  what():  {pg(rank)}Process group watchdog thread terminated with exception: {head}")]
    return [("err", "Traceback (most recent call last):"),
            ("err", "  File \"/opt/venv/lib/python3.10/site-packages/torch/distributed/c10d_logger.py\", line 72, "
                    "in wrapper"),
            ("err", "    return func(*args, **kwargs)"),
            ("err", f"torch.distributed.DistBackendError: {head}"), ("err", body[0]), ("err", body[1]),
            ("err", body[2])]


def nccl_ib_async(hca: str) -> Line:
    """nccl src/transport/net_ib.cc ncclIbAsyncThreadMain (2.19-2.23): `NET/IB : Got async event : %s` with
    ibvAsyncEventStr(IBV_EVENT_PORT_ERR) = `port error` (misc/ibvwrap.cc)."""
    del hca
    return ("nccl|WARN|net_ib.cc:106", "NET/IB : Got async event : port error")


# --- start-up texts ----------------------------------------------------------------------------------------

def nccl_init(rank: int, nranks: int, dev: int, bus: str, comm: str, ib: bool, version: str) -> list[Line]:
    """nccl src/init.cc: the version banner (rank 0 only), the NET/IB or NET/Socket choice (transport/net_ib.cc
    ncclIbInit `NET/IB : Using [0]mlx5_0:1/IB ...`, net_socket.cc), and `Init COMPLETE` (ncclCommInitRankFunc)."""
    out: list[Line] = []
    if rank == 0:
        out.append(("nccl|INFO", f"NCCL version {version}+cuda12.4"))
    out.append(("nccl|INFO", "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB "
                "[RO]; OOB ib0:" if ib else "NET/Socket : Using [0]eth0:"))
    out.append(("nccl|INFO", f"comm {comm} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {dev} busId "
                f"{bus}000 commId 0x5b1c9ae3d1e2f7a4 - Init COMPLETE"))
    return out


FUTURE_WARNING = [
    # torch/distributed/fsdp (FSDP1 wrappers warn on every rank since torch 2.4; the text is torch's own)
    ("err", "/opt/venv/lib/python3.10/site-packages/torch/distributed/fsdp/_init_utils.py:444: UserWarning: FSDP is "
            "switching to use `NO_SHARD` instead of ShardingStrategy.FULL_SHARD since the world size is 1."),
]


def store_retry(master: str, port: int) -> Line:
    """c10d TCPStore client waiting for the server at start-up (torch/csrc/distributed/c10d/socket.cpp:
    `The client socket has failed to connect to [%s]:%d (errno: 111 - Connection refused).`), a retry that
    later succeeds."""
    return c10("W", "socket.cpp:752", f"[c10d] The client socket has failed to connect to [{master}]:{port} "
               "(errno: 111 - Connection refused).")


def port_in_use(port: int) -> list[Line]:
    """TCPStore's server on the master cannot bind (torch/csrc/distributed/c10d/socket.cpp SocketListenOp and
    the DistNetworkError it raises: `The server socket has failed to listen on any local network address.`)."""
    tb = py_traceback(
        [("/opt/venv/lib/python3.10/site-packages/torch/distributed/rendezvous.py", 191, "_create_c10d_store",
          "return TCPStore(")],
        f"torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        f"port: {port}, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use")
    return [c10("W", "socket.cpp:464", f"[c10d] The server socket has failed to bind to [::]:{port} "
                "(errno: 98 - Address already in use)."),
            c10("W", "socket.cpp:464", f"[c10d] The server socket has failed to bind to 0.0.0.0:{port} "
                "(errno: 98 - Address already in use)."),
            c10("E", "socket.cpp:500", "[c10d] The server socket has failed to listen on any local network "
                "address."), *tb]


def store_client_timeout(master: str, port: int, secs: int) -> list[Line]:
    """A client whose server never came up (torch/csrc/distributed/c10d/TCPStore.cpp / socket.cpp connect
    timeout: `The client socket has timed out after %ds while trying to connect to (%s, %d).`)."""
    return py_traceback(
        [("/opt/venv/lib/python3.10/site-packages/torch/distributed/rendezvous.py", 191, "_create_c10d_store",
          "return TCPStore(")],
        f"torch.distributed.DistNetworkError: The client socket has timed out after {secs}s while trying to "
        f"connect to ({master}, {port}).")


def module_missing(mod: str, script: str) -> list[Line]:
    return py_traceback([(script, 14, "<module>", f"import {mod}")], f"ModuleNotFoundError: No module named '{mod}'")


def segv(pid_tid: str, frames: list[str]) -> list[Line]:
    """faulthandler (PYTHONFAULTHANDLER=1, or Python's -X faulthandler): Modules/faulthandler.c
    `Fatal Python error: Segmentation fault` then `Thread 0x... (most recent call first):` and frames."""
    out: list[Line] = [("err", "Fatal Python error: Segmentation fault"), ("err", ""),
                       ("err", f"Thread {pid_tid} (most recent call first):")]
    return out + [("err", f"  {f}") for f in frames]


def dcp_save_start(step: int, path: str) -> Line:
    """What a trainer prints before torch.distributed.checkpoint.save (the app's own line; DCP itself logs
    nothing at INFO)."""
    return ("out", f"Saving distributed checkpoint for step {step} to {path}/step_{step} ...")
