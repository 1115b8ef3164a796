"""What PyTorch, NCCL (and the aws-ofi-nccl plugin) and CUDA print, as text without any launcher's prefix.

Sources, each checked where the README's table says so:
- c10 glog prefix ``[rank3]:[E1207 06:12:01.123456789 ProcessGroupNCCL.cpp:632]`` (torch ≥ 2.4) and ``[E
  ProcessGroupNCCL.cpp:475]`` (2.1): pytorch/pytorch c10/util/Logging.cpp MessageLogger; the ``[rankN]:`` prefix
  as bench/independent{3,5}'s READMEs transcribe it.
- watchdog, dump-signal, teardown texts: torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (WorkNCCL::checkTimeout,
  the heartbeat monitor), as ../shared/research/signatures.md and the READMEs transcribe them.
- ``NCCL error in: …, remote process exited or there was a network error`` / ``ncclRemoteError`` / ``Last error:``:
  torch/csrc/distributed/c10d/NCCLUtils.cpp getNcclErrorDetailStr.
- ``host:pid:tid [dev] NCCL INFO`` / ``[dev] func:line NCCL WARN``: NVIDIA/nccl src/debug.cc ncclDebugLog.
- ``NET/OFI Request %p (%s) completed with error: err: %d, flags: %ld, prov_errno: %d, strerror: %s, len: %ld``:
  aws/aws-ofi-nccl include/nccl_ofi_platform.h Platform::log_cq_error (fetched, 2daf7d3); the warning goes through
  NCCL's logger with ``__PRETTY_FUNCTION__`` as the location; the strerror text for prov_errno 13
  (LOCAL_ERROR_UNRESP_REMOTE) is libfabric prov/efa's, as its unit test efa_unit_test_cq.c asserts it.
- CUDA error texts: cudaGetErrorString; the hint lines: c10/cuda/CUDAException.cpp.
- ``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate …``: c10/cuda/CUDACachingAllocator.cpp (≥ 2.2).
- faulthandler's ``Fatal Python error: Segmentation fault`` block: cpython Python/faulthandler.c."""

from __future__ import annotations

import random

from .clocks import c10

HINTS = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
         "might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
         "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]
EFA_UNRESP = ("Unresponsive receiver. This error is typically caused by a peer hardware failure or incorrect "
              "inbound/outbound rules in the security group - EFA requires \"All traffic\" type allowlisting. "
              "Please also verify the peer application has not terminated unexpectedly.")


def c10_line(new: bool, rank: int, t_local: float, level: str, where: str, msg: str) -> str:
    if new:
        return f"[rank{rank}]:[{level}{c10(t_local)} {where}] {msg}"
    return f"[{level} {where}] {msg}"


def work(seq: int, op: str, timeout_ms: int, numel: int) -> str:
    return (f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, "
            f"Timeout(ms)={timeout_ms})")


def pg(rank: int) -> str:
    return f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"


def watchdog_timeout(new: bool, rank: int, tl: float, seq: int, op: str, timeout_ms: int, ran_ms: int,
                     numel: int) -> list[str]:
    """What a rank whose collective timed out prints, ending in the abort."""
    w = work(seq, op, timeout_ms, numel)
    head = f"[Rank {rank}] Watchdog caught collective operation timeout: {w} ran for {ran_ms} milliseconds " \
           "before timing out."
    if not new:
        return [c10_line(False, rank, tl, "E", "ProcessGroupNCCL.cpp:475", head),
                c10_line(False, rank, tl, "E", "ProcessGroupNCCL.cpp:489", "Some NCCL operations have failed or "
                         "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might "
                         "run on corrupted/incomplete data."),
                c10_line(False, rank, tl, "E", "ProcessGroupNCCL.cpp:495", "To avoid data inconsistency, we are "
                         "taking the entire process down."),
                "terminate called after throwing an instance of 'std::runtime_error'",
                f"  what():  {head}"]
    p = pg(rank)
    return [c10_line(True, rank, tl, "E", "ProcessGroupNCCL.cpp:632", f"{p} {head}"),
            c10_line(True, rank, tl + 0.001, "E", "ProcessGroupNCCL.cpp:2271", f"{p} failure detected by "
                     f"watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, last completed "
                     f"work: {seq - 1}"),
            c10_line(True, rank, tl + 0.001, "E", "ProcessGroupNCCL.cpp:670", "Stack trace of the failed "
                     "collective not found, potentially because FlightRecorder is disabled. You can enable it by "
                     "setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value."),
            c10_line(True, rank, tl + 0.002, "E", "ProcessGroupNCCL.cpp:684", f"{p} To avoid data "
                     "inconsistency, we are taking the entire process down."),
            c10_line(True, rank, tl + 0.003, "E", "ProcessGroupNCCL.cpp:1595", f"{p} Process group watchdog "
                     f"thread terminated with exception: [Rank {rank}] Watchdog caught collective operation "
                     f"timeout: {w} ran for {ran_ms} milliseconds before timing out."),
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {p} Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog "
            f"caught collective operation timeout: {w} ran for {ran_ms} milliseconds before timing out."]


def dump_signal(rank: int, tl: float, from_rank: int, last_enq: int) -> str:
    """Flight recorder on: every rank is told to dump; its own last enqueued work is in the line."""
    return c10_line(True, rank, tl, "E", "ProcessGroupNCCL.cpp:1434", f"{pg(rank)} Received a dump signal due to "
                    f"a collective timeout from  rank {from_rank} and we will try our best to dump the debug info. "
                    f"Last enqueued NCCL work: {last_enq}, last completed NCCL work: {last_enq - 1}.This is most "
                    "likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the "
                    "order of collectives is not same for all ranks or the scheduled collective, for some reason, "
                    "didn't run. Additionally, this can be caused by GIL deadlock or other reasons such as network "
                    "errors or bugs in the communications library (e.g. NCCL), etc. ")


def remote_error(new: bool, rank: int, tl: float, nccl_ver: str, last_error: str) -> list[str]:
    """A survivor whose peer went away: the watchdog sees ncclRemoteError and takes the process down."""
    detail = (f"NCCL error: remote process exited or there was a network error, NCCL version {nccl_ver}\n"
              "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
              f"prematurely.\nLast error:\n{last_error}")
    first, *rest = detail.split("\n")
    where = "ProcessGroupNCCL.cpp:1664" if new else "ProcessGroupNCCL.cpp:1008"
    head = f"{pg(rank)} " if new else ""
    out = [c10_line(new, rank, tl, "E", where,
                    f"{head}Process group watchdog thread terminated with exception: {first}"), *rest]
    exc = "c10::DistBackendError" if new else "std::runtime_error"
    return [*out, f"terminate called after throwing an instance of '{exc}'", f"  what():  {first}", *rest]


def nccl(host: str, pid: int, tid: int, dev: int, level: str, msg: str, where: str = "") -> str:
    if level == "WARN":
        return f"{host}:{pid}:{tid} [{dev}] {where} NCCL WARN {msg}"
    return f"{host}:{pid}:{tid} [{dev}] NCCL INFO {msg}"


def efa_cq_error(rng: random.Random) -> tuple[str, str]:
    """(location, message) of the aws-ofi-nccl completion-error warning for an unresponsive peer."""
    where = ("virtual void Platform::log_cq_error(void*, fid_cq*, fi_cq_err_entry*, const char*):125")
    req = f"0x{rng.randrange(0x7f0000000000, 0x7fffffffffff):x}"
    msg = (f"NET/OFI Request {req} ({rng.choice(('SEND', 'RECV', 'WRITE'))}) completed with error: err: 5, flags: "
           f"{rng.choice((2048, 8192, 1024))}, prov_errno: 13, strerror: {EFA_UNRESP}, len: 0")
    return where, msg


def ib_completion(peer_ip: str, port: int, local_ip: str, recv: bool) -> tuple[str, str]:
    """NCCL 2.19-2.22 net_ib.cc ncclIbTest wording (as bench/independent3's README transcribes it)."""
    return "transport/net_ib.cc:1696", (
        f"NET/IB : Got completion from peer {peer_ip}<{port}> with status=12 opcode=0 len=0 vendor err 129 "
        f"({'Recv' if recv else 'Send'}) localGid ::ffff:{local_ip} remoteGid ::ffff:{peer_ip}")


def socket_closed(peer_ip: str, port: int) -> tuple[str, str]:
    return "misc/socket.cc:49", f"socketProgress: Connection closed by remote peer {peer_ip}<{port}>"


def cuda_error_traceback(text: str, step_file: str) -> list[str]:
    return ["Traceback (most recent call last):",
            f'  File "/workspace/{step_file}", line 212, in <module>', "    main()",
            f'  File "/workspace/{step_file}", line 171, in main', "    loss.backward()",
            '  File "/usr/local/lib/python3.10/dist-packages/torch/_tensor.py", line 581, in backward',
            "    torch.autograd.backward(",
            '  File "/usr/local/lib/python3.10/dist-packages/torch/autograd/graph.py", line 825, in '
            "_engine_run_backward",
            "    return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward "
            "pass", f"RuntimeError: CUDA error: {text}", *HINTS[:3]]


def cuda_error_watchdog(new: bool, rank: int, tl: float, text: str) -> list[str]:
    """The error surfaces in the watchdog's event query rather than in Python."""
    where = "ProcessGroupNCCL.cpp:1664" if new else "ProcessGroupNCCL.cpp:1008"
    head = f"{pg(rank)} " if new else ""
    msg = f"CUDA error: {text}"
    return [c10_line(new, rank, tl, "E", where, f"{head}Process group watchdog thread terminated with exception: "
                     f"{msg}"), *HINTS[:3], "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {msg}", *HINTS[:3]]


def cuda_oom(gib: float, dev: int, total: float, step_file: str) -> list[str]:
    free = round(total - 77.4 - gib / 3, 2)
    return ["Traceback (most recent call last):", f'  File "/workspace/{step_file}", line 212, in <module>',
            "    main()", f'  File "/workspace/{step_file}", line 158, in main', "    logits = model(batch)",
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib:.2f} GiB. GPU {dev} has a total "
            f"capacity of {total:.2f} GiB of which {max(free, 0.31):.2f} GiB is free. Including non-PyTorch memory, "
            f"this process has {total - 0.6:.2f} GiB memory in use. Of the allocated memory 71.03 GiB is allocated "
            "by PyTorch, and 3.12 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
            "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-"
            "variables)"]


def faulthandler_segv(step_file: str) -> list[str]:
    return ["Fatal Python error: Segmentation fault", "",
            "Thread 0x00007f2c3affd640 (most recent call first):",
            '  File "/usr/lib/python3.10/threading.py", line 324 in wait',
            '  File "/usr/lib/python3.10/threading.py", line 607 in wait', "",
            "Current thread 0x00007f2e9b4f1740 (most recent call first):",
            '  File "/usr/local/lib/python3.10/dist-packages/torch/nn/functional.py", line 2982 in cross_entropy',
            f'  File "/workspace/{step_file}", line 161 in main',
            f'  File "/workspace/{step_file}", line 212 in <module>', "",
            "Extension modules: numpy.core._multiarray_umath, torch._C, torch._C._fft (total: 31)"]
