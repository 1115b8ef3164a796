"""PyTorch, NCCL, CUDA and Python texts a rank prints. Each template cites where it was read; "public logs" means the
wording was checked against logs found with the `find_string` tool, not against the printing source.

A c10 line is returned as (severity, "File.cpp:N", message); the caller stamps it (clocks.c10) and, on torch >= 2.4,
prefixes `[rankN]:`. Line numbers follow public torch 2.4-2.6 logs and are not meant to match one release."""

from __future__ import annotations

C10 = tuple[str, str, str]
CUDA_HINT = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
             "might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]  # c10/cuda/CUDAException.cpp


def pg(rank: int, new: bool) -> str:
    """ProcessGroupNCCL::logPrefix(): `[PG ID 0 PG GUID 0(default_pg) Rank N] ` (torch >= 2.4), `[Rank N] ` before."""
    return f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] " if new else f"[Rank {rank}] "


def work(seq: int, op: str, numel: int, timeout_s: int) -> str:
    """WorkNCCL's operator<< as public logs print it (ProcessGroupNCCL.cpp)."""
    return (f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, "
            f"Timeout(ms)={timeout_s * 1000})")


def watchdog_timeout(rank: int, seq: int, op: str, numel: int, timeout_s: int, ran_ms: int, enq: int, done: int,
                     new: bool, fr: bool) -> list[C10]:
    """ProcessGroupNCCL.cpp WorkNCCL::checkTimeout (`Watchdog caught collective operation timeout: ` … ` ran for N
    milliseconds before timing out.`, read in the source), then the watchdog's PG status line, the flight-recorder
    notice and, with TORCH_NCCL_DUMP_ON_TIMEOUT, getNCCLWatchdogTimeoutErrorMsg (read in the source); the sequence
    and file:line numbers as in a public torch 2.5 log."""
    w = work(seq, op, numel, timeout_s)
    out = [("E", "ProcessGroupNCCL.cpp:632", f"[Rank {rank}] Watchdog caught collective operation timeout: {w} ran "
            f"for {ran_ms} milliseconds before timing out.")]
    if new:
        out.append(("E", "ProcessGroupNCCL.cpp:2271", f"{pg(rank, new)} failure detected by watchdog at work "
                    f"sequence id: {seq} PG status: last enqueued work: {enq}, last completed work: {done}"))
        if not fr:
            out.append(("E", "ProcessGroupNCCL.cpp:670", "Stack trace of the failed collective not found, potentially"
                        " because FlightRecorder is disabled. You can enable it by setting "
                        "TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value."))
    return out


def dump_signal(rank: int, source: str, enq: int, done: int) -> list[C10]:
    """The heartbeat monitor on a rank told to dump (ProcessGroupNCCL.cpp getNCCLWatchdogTimeoutErrorMsg, read):
    `from this local rank` on the rank whose watchdog fired, `from  rank N` (two spaces: the source pastes " rank N")
    elsewhere, as public logs show. `Last enqueued NCCL work` is this rank's own PG status."""
    text = "this local rank" if source == "local" else f" rank {source}"
    lines = []
    if source != "local":
        lines.append(("E", "ProcessGroupNCCL.cpp:1922", f"{pg(rank, True)}Observed flight recorder dump signal from "
                      "another rank via TCPStore."))
    lines.append(("E", "ProcessGroupNCCL.cpp:1987", f"{pg(rank, True)}Received a dump signal due to a collective "
                  f"timeout from {text} and we will try our best to dump the debug info. Last enqueued NCCL work: "
                  f"{enq}, last completed NCCL work: {done}.This is most likely caused by incorrect usages of "
                  "collectives, e.g., wrong sizes used across ranks, the order of collectives is not same for all "
                  "ranks or the scheduled collective, for some reason, didn't run. Additionally, this can be caused by"
                  " GIL deadlock or other reasons such as network errors or bugs in the communications library (e.g. "
                  "NCCL), etc. "))
    lines.append(("E", "ProcessGroupNCCL.cpp:1536", f"{pg(rank, True)}ProcessGroupNCCL preparing to dump debug info. "
                  "Include stack trace: 1"))
    return lines


def teardown(rank: int, new: bool) -> list[C10]:
    """WorkNCCL::handleException (read): the two lines before the process is taken down."""
    return [("E", "ProcessGroupNCCL.cpp:684", f"[Rank {rank}] Some NCCL operations have failed or timed out. Due to "
             "the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
             "data."),
            ("E", "ProcessGroupNCCL.cpp:690", f"[Rank {rank}] To avoid data inconsistency, we are taking the entire "
             "process down.")]


def watchdog_died(rank: int, what: str, new: bool) -> list[C10]:
    """ProcessGroupNCCL's watchdog thread ending on an exception (public logs:
    `Process group watchdog thread terminated with exception: …`)."""
    return [("E", "ProcessGroupNCCL.cpp:1595", f"{pg(rank, new)}Process group watchdog thread terminated with "
             f"exception: {what}")]


def store_retry(master: str) -> C10:
    """c10d TCPStore client retrying before the master listens: torch/csrc/distributed/c10d/socket.cpp, printed
    before the process group exists (so without `[rankN]:`), as public logs show."""
    return ("W", "socket.cpp:697", f"[c10d] The client socket has failed to connect to [{master}]:29500 (errno: 111 "
            "- Connection refused).")


def nccl_remote(version: str, last: str) -> list[str]:
    """NCCLUtils getNcclErrorDetailStr for ncclRemoteError plus ncclGetLastError (as public logs print it)."""
    return [f"NCCL error: remote process exited or there was a network error, NCCL version {version}",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:", last]


def nccl_prefix(host: str, pid: int, tid: int, dev: int) -> str:
    """nccl src/debug.cc: `%s:%d:%d [%d] ` (hostname, pid, tid, cudaDev), as every public NCCL log shows."""
    return f"{host}:{pid}:{tid} [{dev}] "


def nccl_init(host: str, pid: int, dev: int, rank: int, world: int, bus: str, comm: str, ib: bool,
              ip: str, first: bool, version: str) -> list[str]:
    """NCCL_DEBUG=INFO start-up lines (nccl init.cc / bootstrap.cc / net_ib.cc as public logs print them); the
    `comm 0x… rank R nranks W cudaDev L nvmlDev L busId B commId 0x… - Init COMPLETE` line ties rank, host, pid and
    local GPU together."""
    p = nccl_prefix(host, pid, pid, dev)
    net = ("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB eth0:" + ip + "<0>"
           if ib else "NET/Socket : Using [0]eth0:" + ip + "<0>")
    out = [p + f"NCCL INFO Bootstrap : Using eth0:{ip}<0>"]
    if first:
        out.append(p + f"NCCL INFO NCCL version {version}")
    out += [p + "NCCL INFO " + net, p + f"NCCL INFO Using network {'IB' if ib else 'Socket'}",
            p + f"NCCL INFO comm {comm} rank {rank} nranks {world} cudaDev {dev} nvmlDev {dev} busId {bus} "
            f"commId 0x5f1e92c0a7b3d4e1 - Init COMPLETE"]
    return out


def ib_completion(peer_ip: str, port: int, vendor: int) -> str:
    """nccl transport/net_ib.cc ncclIbTest on an IB link layer: `NET/IB : Got completion from peer %s with status=%d
    opcode=%d len=%d vendor err %d (%s)` (read in a copy of net_ib.cc; 12 = IBV_WC_RETRY_EXC_ERR)."""
    return (f"NET/IB : Got completion from peer {peer_ip}<{port}> with status=12 opcode=0 len=0 vendor err {vendor} "
            "(Send)")


def socket_closed(peer_ip: str, port: int) -> str:
    """nccl misc/socket.cc socketProgress (as public logs print it)."""
    return f"socketProgress: Connection closed by remote peer {peer_ip}<{port}>"


def nccl_warn(host: str, pid: int, dev: int, src: str, msg: str) -> str:
    """nccl debug.cc WARN: `host:pid:tid [dev] file.cc:line NCCL WARN msg`."""
    return nccl_prefix(host, pid, pid + 17, dev) + f"{src} NCCL WARN {msg}"


def traceback(frames: list[tuple[str, int, str, str]], exc: list[str]) -> list[str]:
    """CPython's traceback module layout."""
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'  File "{path}", line {line}, in {func}', f"    {code}"]
    return out + exc


SITE = "/usr/local/lib/python3.11/dist-packages"


def step_frames(script: str, app: str) -> list[tuple[str, int, str, str]]:
    """A training step's frames: the user script, then the framework (Composer, Ray Train, plain torchrun)."""
    if app == "composer":
        return [(f"/workspace/{script}", 214, "<module>", "trainer.fit()"),
                (f"{SITE}/composer/trainer/trainer.py", 2356, "fit", "self._train_loop()"),
                (f"{SITE}/composer/trainer/trainer.py", 2632, "_train_loop", "total_loss_dict = self._train_batch"
                 "(use_grad_scaling)"),
                (f"{SITE}/composer/trainer/trainer.py", 3007, "_train_batch", "self._train_microbatches(microbatches"
                 ", total_loss_dict)")]
    return [(f"/workspace/{script}", 188, "main" if app == "torchrun" else "train_func", "loss = train_step(model, "
             "batch, optimizer)"),
            (f"/workspace/{script}", 97, "train_step", "loss.backward()"),
            (f"{SITE}/torch/_tensor.py", 626, "backward", "torch.autograd.backward(")]


def cuda_error(what: str) -> list[str]:
    """c10/cuda/CUDAException.cpp c10_cuda_check_implementation: `CUDA error: <cudaGetErrorString>` + hint lines.
    Strings: cudaErrorLaunchFailure `unspecified launch failure`, cudaErrorECCUncorrectable `uncorrectable ECC error
    encountered`, cudaErrorNvlinkUncorrectable `uncorrectable NVLink error detected during the execution`."""
    return [f"RuntimeError: CUDA error: {what}", *CUDA_HINT]


def streaming_checksum(shard: str, worker: int) -> list[str]:
    """mosaicml/streaming streaming/base/stream.py `raise ValueError(f'Checksum failure: {zip_filename}')` (read),
    re-raised by torch/_utils.py ExceptionWrapper.reraise as `Caught ValueError in DataLoader worker process N.`."""
    return [f"ValueError: Caught ValueError in DataLoader worker process {worker}.",
            "Original Traceback (most recent call last):",
            f'  File "{SITE}/torch/utils/data/_utils/worker.py", line 351, in _worker_loop',
            "    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
            f'  File "{SITE}/streaming/base/dataset.py", line 1311, in __getitem__',
            "    sample = self.get_item(sample_id)",
            f'  File "{SITE}/streaming/base/stream.py", line 411, in _decompress_shard_part',
            "    raise ValueError(f'Checksum failure: {zip_filename}')",
            f"ValueError: Checksum failure: {shard}"]


def disk_full(path: str, n: int, line: int) -> list[str]:
    """torch.save's zip writer on a full disk: caffe2/serialize/inline_container.cc
    `PytorchStreamWriter failed writing file data/N: file write failed` behind `[enforce fail at …]` (public logs)."""
    return [f"RuntimeError: [enforce fail at inline_container.cc:{line}] . PytorchStreamWriter failed writing file "
            f"data/{n}: file write failed"]


def sigterm_agent(t: float, pid: int) -> tuple[str, str]:
    """torch/distributed/elastic/agent/server/api.py (`Received %s death signal, shutting down workers`) and
    multiprocessing/api.py _terminate_process_handler (`Process %d got signal: %d`, SignalException), as public
    torch 2.4+ logs print them."""
    return ("Received Signals.SIGTERM death signal, shutting down workers",
            f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {pid} got signal: 15")
