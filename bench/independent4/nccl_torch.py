"""What PyTorch, NCCL and the CUDA runtime print, as message texts (the renderer adds each program's prefix).

Each function returns a list of Rec: (style, level, where, message). style says which prefix the renderer writes:
"c10" (c10/util/Logging.cpp MessageLogger, `[rankN]:[E1207 hh:mm:ss.ns File.cpp:N]` since torch 2.3), "nccl"
(NVIDIA/nccl src/debug.cc ncclDebugLogV: `host:pid:tid [cudaDev] NCCL INFO msg`, and for WARN
`[cudaDev] file:line NCCL WARN msg`, with ` (func)` after the line number since 2.30, optionally behind a
`[%F %T] ` stamp when
NCCL_DEBUG_TIMESTAMP_LEVELS is set, 2.26+), "py" (a Python traceback or print: no prefix).
"""

from __future__ import annotations

from typing import NamedTuple


class Rec(NamedTuple):
    style: str
    level: str
    where: str
    msg: str


def py(*lines: str) -> list[Rec]:
    return [Rec("py", "", "", x) for x in lines]


# --- PyTorch ProcessGroupNCCL (pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; strings as
# transcribed and checked in ../shared/research/signatures.md pt_nccl_watchdog_timeout, pt_nccl_async_error_teardown,
# pt_dump_signal_from_other_rank; the `[PG ID 0 PG GUID 0(default_pg) Rank N]` log prefix is logPrefix(), 2.4+)

def pg(rank: int) -> str:
    return f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"


def work(seq: int, op: str, numel: int, timeout_ms: int) -> str:
    # WorkNCCL's operator<< (ProcessGroupNCCL.cpp): NumelIn/NumelOut since 2024
    return f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout_ms})"


def watchdog_timeout(rank: int, seq: int, op: str, numel: int, timeout_ms: int, ran_ms: int,
                     last_done: int) -> list[Rec]:
    """WorkNCCL::checkTimeout, then the watchdog's handler (ProcessGroupNCCL::watchdogHandler) and the teardown."""
    w = work(seq, op, numel, timeout_ms)
    first = (f"[Rank {rank}] Watchdog caught collective operation timeout: {w} ran for {ran_ms} milliseconds before "
             "timing out.")
    return [
        Rec("c10", "E", "ProcessGroupNCCL.cpp:632", first),
        Rec("c10", "E", "ProcessGroupNCCL.cpp:2271", f"{pg(rank)} failure detected by watchdog at work sequence id: "
            f"{seq} PG status: last enqueued work: {seq}, last completed work: {last_done}"),
        Rec("c10", "E", "ProcessGroupNCCL.cpp:670", "Stack trace of the failed collective not found, potentially "
            "because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a "
            "non-zero value."),
        Rec("c10", "E", "ProcessGroupNCCL.cpp:684", f"[Rank {rank}] Some NCCL operations have failed or timed out. Due "
            "to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
            "data."),
        Rec("c10", "E", "ProcessGroupNCCL.cpp:698", f"[Rank {rank}] To avoid data inconsistency, we are taking the "
            "entire process down."),
        Rec("c10", "E", "ProcessGroupNCCL.cpp:1921", f"{pg(rank)} Process group watchdog thread terminated with "
            f"exception: {first}"),
        *py("terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {pg(rank)} Process group watchdog thread terminated with exception: {first}"),
    ]


def dump_signal(rank: int, from_rank: int, last_enq: int, last_done: int) -> list[Rec]:
    """ProcessGroupNCCL heartbeat monitor on a rank that did not itself time out (TORCH_NCCL_DUMP_ON_TIMEOUT)."""
    return [Rec("c10", "E", "ProcessGroupNCCL.cpp:1550", f"{pg(rank)} Received a dump signal due to a collective "
                f"timeout from rank {from_rank} and we will try our best to dump the debug info. Last enqueued NCCL "
                f"work: {last_enq}, last completed NCCL work: {last_done}.This is most likely caused by incorrect "
                "usages of collectives, e.g., wrong sizes used across ranks, the order of collectives is not same "
                "for all ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be "
                "caused by GIL deadlock or other reasons such as network errors or bugs in the communications "
                "library (e.g. NCCL), etc. ")]


def watchdog_cuda_error(rank: int, err: str) -> list[Rec]:
    """The watchdog's event query hits a sticky CUDA error (c10/cuda/CUDAException.cpp c10_cuda_check_implementation
    adds the asynchronous-report hint)."""
    text = (f"CUDA error: {err}\nCUDA kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
    out = [Rec("c10", "E", "ProcessGroupNCCL.cpp:1921", f"{pg(rank)} Process group watchdog thread terminated with "
               f"exception: {text.splitlines()[0]}")]
    out += py(*text.splitlines(), "Exception raised from c10_cuda_check_implementation at "
              "/pytorch/c10/cuda/CUDAException.cpp:43 (most recent call first):",
              "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a1c46c446 in "
              "/usr/local/lib/python3.11/site-packages/torch/lib/libc10.so)",
              "terminate called after throwing an instance of 'c10::DistBackendError'")
    return out


def remote_error(version: str, last: str) -> list[Rec]:
    """torch/csrc/distributed/c10d/NCCLUtils.cpp getNcclErrorDetailStr for ncclRemoteError, raised as
    torch.distributed.DistBackendError from the collective's Python frame."""
    return py("Traceback (most recent call last):",
              '  File "/workspace/train.py", line 211, in <module>',
              "    main()",
              '  File "/workspace/train.py", line 187, in train_step',
              "    dist.all_reduce(grad_buf, op=dist.ReduceOp.SUM)",
              "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
              f"ProcessGroupNCCL.cpp:3356, remote process exited or there was a network error, NCCL version {version}",
              "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
              "prematurely.", "Last error:", last)


def invalid_usage_init(version: str, last: str) -> list[Rec]:
    """ncclInvalidUsage at communicator init (NCCLUtils.cpp getNcclErrorDetailStr)."""
    return py("Traceback (most recent call last):",
              '  File "/workspace/train.py", line 64, in setup',
              "    dist.barrier(device_ids=[local_rank])",
              "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
              "ProcessGroupNCCL.cpp:2204, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version "
              f"{version}",
              "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.", "Last error:", last)


def cuda_oom(gpu: int, want: str, free: str, used: str, alloc: str, reserved: str) -> list[Rec]:
    """c10/cuda/CUDACachingAllocator.cpp (torch >= 2.2 text; signatures.md cuda_oom)."""
    return py("Traceback (most recent call last):",
              '  File "/workspace/train.py", line 179, in train_step',
              "    logits = model(batch[\"input_ids\"])",
              f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {want}. GPU {gpu} has a total capacity "
              f"of 79.10 GiB of which {free} is free. Including non-PyTorch memory, this process has {used} memory in "
              f"use. Of the allocated memory {alloc} is allocated by PyTorch, and {reserved} is reserved by PyTorch "
              "but unallocated. If reserved but unallocated memory is large try setting "
              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
              "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def cuda_runtime_error(err: str) -> list[Rec]:
    """A sticky CUDA error raised from the training step (c10/cuda/CUDAException.cpp)."""
    return py("Traceback (most recent call last):",
              '  File "/workspace/train.py", line 183, in train_step',
              "    loss.backward()",
              f"RuntimeError: CUDA error: {err}",
              "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
              "might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
              "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", "")


def dataloader_truncated(worker: int, path: str, missing: int) -> list[Rec]:
    """torch/_utils.py ExceptionWrapper.reraise (`Caught X in DataLoader worker process N.`) around Pillow's
    ImageFile.load (`image file is truncated (N bytes not processed)`)."""
    return py("Traceback (most recent call last):",
              '  File "/workspace/train.py", line 171, in train_step',
              "    batch = next(it)",
              f"OSError: Caught OSError in DataLoader worker process {worker}.",
              "Original Traceback (most recent call last):",
              '  File "/usr/local/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 351, in '
              "_worker_loop", "    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
              '  File "/workspace/data.py", line 58, in __getitem__',
              "    img = Image.open(self.files[i]).convert(\"RGB\")",
              '  File "/usr/local/lib/python3.11/site-packages/PIL/ImageFile.py", line 293, in load',
              "    raise OSError(msg)",
              f"OSError: image file is truncated ({missing} bytes not processed)", f"(file: {path})")


def missing_file(path: str) -> list[Rec]:
    """CPython's FileNotFoundError text (strerror ENOENT), raised from the dataset's open()."""
    return py("Traceback (most recent call last):",
              '  File "/workspace/data.py", line 31, in __init__',
              "    with open(self.index_path) as fh:",
              f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'")


def faulthandler_segv(tid: str) -> list[Rec]:
    """CPython Modules/faulthandler.c (`Fatal Python error: Segmentation fault`, then the thread dump)."""
    return py("Fatal Python error: Segmentation fault", "",
              f"Thread 0x{tid} (most recent call first):",
              '  File "/usr/local/lib/python3.11/site-packages/torch/autograd/graph.py", line 825 in '
              "_engine_run_backward",
              '  File "/workspace/ext/fused_rope.py", line 77 in backward', "")


# --- NCCL (NVIDIA/nccl, master as fetched: src/init.cc, bootstrap.cc, transport/net_ib/{p2p,common}.cc,
# misc/socket.cc). INFO/WARN records; the renderer adds `host:pid:tid [dev] ... NCCL INFO|WARN`.

def nccl_version(version: str) -> Rec:
    return Rec("nccl", "INFO", "", f"NCCL version {version}+cuda12.4")  # init.cc showVersion, rank 0


def nccl_bootstrap(ifname: str, ip: str) -> Rec:
    return Rec("nccl", "INFO", "", f"Bootstrap: Using {ifname}:{ip}<0>")  # bootstrap.cc bootstrapNetInit


def nccl_init_complete(comm: str, rank: int, nranks: int, dev: int, bus: str, comm_id: str) -> Rec:
    # init.cc ncclCommInitRankFunc:
    # "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE"
    busid = bus.split(":")[1] + "000"
    return Rec("nccl", "INFO", "", f"ncclCommInitRankConfig comm {comm} rank {rank} nranks {nranks} cudaDev {dev} "
               f"nvmlDev {dev} busId {busid} commId 0x{comm_id} - Init COMPLETE")


def nccl_no_interface() -> Rec:
    return Rec("nccl", "WARN", "bootstrap.cc:126 (bootstrapNetInit)", "Bootstrap : no socket interface found")


def nccl_ifname_env(value: str) -> Rec:
    return Rec("nccl", "INFO", "", f"NCCL_SOCKET_IFNAME set by environment to {value}")  # misc/socket.cc


def ib_port_event(hca: str, port: int, what: str, code: int) -> Rec:
    """transport/net_ib/common.cc ncclIbAsyncThreadMain: non-fatal events (port error = IBV_EVENT_PORT_ERR 10,
    port active = IBV_EVENT_PORT_ACTIVE 9; names from libibverbs ibv_event_type_str)."""
    return Rec("nccl", "WARN", "transport/net_ib/common.cc:185 (ncclIbAsyncThreadMain)",
               f"NET/IB : {hca}:{port} Got non-fatal async event: {what}({code})")


def ib_completion_error(peer: str, hca: str, roce: tuple[str, str] | None) -> Rec:
    """transport/net_ib/p2p.cc ncclIbLogCompletionWithError (status/opcode via misc/ibvwrap.cc ibvWcStatusStr /
    ibvWcOpcodeStr; the GIDs only on RoCE links)."""
    gids = f" localGid {roce[0]} remoteGids{roce[1]}" if roce else ""
    return Rec("nccl", "WARN", "transport/net_ib/p2p.cc:688 (ncclIbLogCompletionWithError)",
               f"NET/IB: Got completion from peer {peer} with status=IBV_WC_RETRY_EXC_ERR(12) "
               f"opcode=IBV_WC_SEND(0) vendor_err=129 {gids} hca {hca}")


def ib_retry_hint() -> list[Rec]:
    """transport/net_ib/common.h printIbWcStatusHint for IBV_WC_RETRY_EXC_ERR."""
    return [Rec("nccl", "INFO", "", "HINT: In many cases this error occurs when the NCCL_IB_TIMEOUT is set too short."),
            Rec("nccl", "INFO", "", "HINT: Default value is 20, which is ~30 seconds before error."),
            Rec("nccl", "INFO", "", "HINT: To confirm, try increasing the value of NCCL_IB_TIMEOUT and see if the "
                "error persists.")]


def socket_closed(peer: str) -> Rec:
    return Rec("nccl", "WARN", "misc/socket.cc:50 (socketProgress)",
               f"socketProgress: Connection closed by remote peer {peer}")  # misc/socket.cc socketProgress


def healthy_warnings() -> list[list[Rec]]:
    """Warnings a healthy run prints too (distractors): c10d's TCPStore client retrying while the server is not up
    yet (torch/csrc/distributed/c10d/socket.cpp; signatures.md), a deprecation from torch.utils.checkpoint,
    and NCCL's note that NVLS is off."""
    return [
        [Rec("c10", "W", "socket.cpp:755", "[c10d] The client socket has failed to connect to [{master}]:29500 "
             "(errno: 111 - Connection refused).")],
        py("/usr/local/lib/python3.11/site-packages/torch/utils/checkpoint.py:1399: FutureWarning: "
           "`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.",
           "  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), recompute_context:  # type: "
           "ignore[attr-defined]"),
        [Rec("c10", "W", "ProcessGroupNCCL.cpp:4561", "{pgr} using GPU {gpu} to perform barrier as devices used by "
             "this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is "
             "incorrect. Specify device_ids in barrier() to force use of a particular device, or call "
             "init_process_group() with a device_id.")],
    ]
