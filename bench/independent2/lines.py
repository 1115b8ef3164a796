"""Message templates, each written from the upstream source that prints it (cited per function).

Rank texts may span several lines; layouts prefix each line. Placeholders @GLOG@/@PYTS@/@ISO@ are rendered
with the printing host's (skewed) clock by Topo.stamp.
"""

from __future__ import annotations

from .topo import Topo


def c10(topo: Topo, level: str, where: str, msg: str) -> str:
    """pytorch/pytorch c10/util/Logging.cpp MessageLogger: '[E1207 01:02:03.123456789 File.cpp:N] msg' (2.4+; the
    month is not zero-padded, e.g. '[E515 18:36:47.341808597' in pytorch/pytorch#152623),
    '[E File.cpp:N] msg' in 2.0-2.2 (the glog-less fallback formatter)."""
    if topo.torch_new:
        return f"[{level}@C10@ {where}] {msg}"
    return f"[{level} {where}] {msg}"


def nccl_ver(topo: Topo) -> str:
    return ".".join(str(x) for x in topo.nccl_ver)


def nccl_init(topo: Topo, rank: int) -> str:
    """NVIDIA/nccl src/init.cc initTransportsRank / ncclCommInitRankFunc 'Init COMPLETE' line and
    src/transport/net_ib.cc ncclIbInit 'NET/IB : Using ... ; OOB ib0:<ip><0>' (both at NCCL_DEBUG=INFO)."""
    p = topo.nccl_prefix(rank)
    node = topo.node(rank)
    bus = topo.bus(topo.local(rank))
    lines = [f"{p} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:{topo.ips[node]}<0>"]
    if rank == 0:
        lines.insert(0, f"{p} NCCL INFO NCCL version {nccl_ver(topo)}+cuda12.2")
    lines.append(
        f"{p} NCCL INFO comm 0x55d{topo.pids[0] % 0xfffff:05x}0 rank {rank} nranks {topo.world} cudaDev "
        f"{topo.local(rank)} nvmlDev {topo.local(rank)} busId {bus}000 commId 0x{topo.job_id:x}a11 - Init COMPLETE"
    )
    return "\n".join(lines)


def nccl_warn(topo: Topo, rank: int, where: str, msg: str) -> str:
    """NVIDIA/nccl src/debug.cc ncclDebugLog WARN form: '<host>:<pid>:<tid> [dev] file.cc:N NCCL WARN msg'."""
    return f"{topo.nccl_prefix(rank)} {where} NCCL WARN {msg}"


def conn_closed(topo: Topo, rank: int, peer_ip: str, port: int) -> str:
    """NVIDIA/nccl src/misc/socket.cc socketProgress: 'socketProgress: Connection closed by remote peer %s'
    (the peer printed by ncclSocketToString as ip<port>)."""
    msg = f"socketProgress: Connection closed by remote peer {peer_ip}<{port}>"
    return nccl_warn(topo, rank, "misc/socket.cc:49", msg)


def ib_completion(topo: Topo, rank: int, peer_ip: str, port: int, status: int, vendor: int) -> str:
    """NVIDIA/nccl src/transport/net_ib.cc ncclIbTest, v2.19-2.22 form:
    'NET/IB : Got completion from peer %s with status=%d opcode=%d len=%d vendor err %d (%s)'."""
    where = "transport/net_ib.cc:1909" if topo.nccl_ver >= (2, 19, 0) else "transport/net_ib.cc:1295"
    if topo.nccl_ver >= (2, 19, 0):
        msg = (f"NET/IB : Got completion from peer {peer_ip}<{port}> with status={status} opcode=0 len=0 vendor err "
               f"{vendor} (Send)")
    else:  # v2.18: 'with error %d, opcode %d, len %d, vendor err %d'
        msg = (f"NET/IB : Got completion from peer {peer_ip}<{port}> with error {status}, opcode 0, len 0, vendor "
               f"err {vendor}")
    return nccl_warn(topo, rank, where, msg)


def remote_error(topo: Topo, rank: int, last: str) -> str:
    """pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp watchdog + NCCLUtils getNcclErrorDetailStr:
    ncclRemoteError text 'remote process exited or there was a network error' (nccl src/init.cc ncclGetErrorString)."""
    head = (
        f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] " if topo.torch_new else f"[Rank {rank}] "
    ) + "Process group watchdog thread terminated with exception: "
    return "\n".join(
        [
            c10(topo, "E", "ProcessGroupNCCL.cpp:1521", head + f"NCCL error: remote process exited or there was a "
                f"network error, NCCL version {nccl_ver(topo)}"),
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:",
            last.split(" NCCL WARN ", 1)[-1],
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            "Fatal Python error: Aborted",
        ]
    )


def watchdog_timeout(topo: Topo, rank: int, seq: int, ran_ms: int, short: bool) -> str:
    """pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp WorkNCCL::checkTimeout:
    '[Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=..., OpType=..., NumelIn=...,
    NumelOut=..., Timeout(ms)=...) ran for %d milliseconds before timing out.' and the teardown that follows
    (ProcessGroupNCCL::watchdogHandler 'Some NCCL operations have failed or timed out...')."""
    work = f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=50331648, NumelOut=50331648, Timeout(ms)=600000)"
    first = c10(topo, "E", "ProcessGroupNCCL.cpp:616", f"[Rank {rank}] Watchdog caught collective operation timeout: "
                f"{work} ran for {ran_ms} milliseconds before timing out.")
    if short:
        return first
    return "\n".join(
        [
            first,
            c10(topo, "E", "ProcessGroupNCCL.cpp:1664", f"[Rank {rank}] Exception (either an error or timeout) "
                "detected "
                f"by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}."),
            c10(topo, "E", "ProcessGroupNCCL.cpp:630", f"[Rank {rank}] Some NCCL operations have failed or timed out. "
                "Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                "corrupted/incomplete data."),
            c10(topo, "E", "ProcessGroupNCCL.cpp:636", f"[Rank {rank}] To avoid data inconsistency, we are taking the "
                "entire process down."),
            "terminate called after throwing an instance of 'c10::DistBackendError'",
        ]
    )


def desync_report(topo: Topo, rank: int, culprit: int, seq: int) -> str:
    """pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp retrieveDesyncReport
    (TORCH_NCCL_DESYNC_DEBUG=1): 'To our best knowledge, the lagging/dead/mismatched ranks that caused the
    desync are:' then '[N] finished collective #S, but didn't join collective #S+1 (count from 1)'."""
    return "\n".join(
        [
            c10(topo, "E", "ProcessGroupNCCL.cpp:1196", f"[Rank {rank}] Timeout at NCCL work: {seq}, last enqueued "
                "NCCL "
                f"work: {seq}, last completed NCCL work: {seq - 1}."),
            c10(topo, "E", "ProcessGroupNCCL.cpp:1209", f"[Rank {rank}] Desync report: ..."),
            "",
            "To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
            f"             - [{culprit}] finished collective #{seq - 1}, but didn't join collective #{seq} "
            "(count from 1)",
            "             - Snapshot of ranks' latest states:",
            f"               #{seq} started ranks:",
            "                 [" + ", ".join(str(r) for r in range(min(topo.world, 64)) if r != culprit) + "]",
        ]
    )


def fr_trace(topo: Topo, culprit: int, seq: int) -> str:
    """pytorch/pytorch tools/flight_recorder (python -m torch.distributed.flight_recorder.fr_trace), its
    components/builder.py build_collectives: 'Not all ranks joining collective N at entry M' / missing ranks."""
    return "\n".join(
        [
            f"Not all ranks joining collective {seq} at entry {seq % 2000}",
            "group info: 0:default_pg",
            "collective: nccl:all_reduce",
            f"missing ranks: {{{culprit}}}",
            "input sizes: [[50331648]]",
            "output sizes: [[50331648]]",
            "expected ranks: " + str(topo.world),
            "collective state: scheduled",
        ]
    )


def traceback(frames: list[tuple[str, int, str, str]], exc: str) -> str:
    """CPython Lib/traceback.py format: 'Traceback (most recent call last):' / '  File "f", line N, in fn'."""
    out = ["Traceback (most recent call last):"]
    for f, n, fn, src in frames:
        out += [f'  File "{f}", line {n}, in {fn}', f"    {src}"]
    out.append(exc)
    return "\n".join(out)


TRAIN_FRAMES = [
    ("/workspace/train.py", 412, "<module>", "main()"),
    ("/workspace/train.py", 377, "main", "train_one_epoch(model, loader, optim, step)"),
    ("/workspace/train.py", 251, "train_one_epoch", "loss.backward()"),
    ("/usr/local/lib/python3.10/dist-packages/torch/_tensor.py", 525, "backward",
     "torch.autograd.backward("),
]


def cuda_error(err: str) -> str:
    """pytorch/pytorch c10/cuda/CUDAException.cpp c10_cuda_check_implementation (torch >= 2.1)."""
    return "\n".join(
        [
            f"RuntimeError: CUDA error: {err}",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
            "might be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        ]
    )


def xid(bus: str, code: int, pid: int | None, text: str) -> str:
    """NVIDIA/open-gpu-kernel-modules nvErrorLog_va / kernel_rc: 'NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s,
    name=%s, %s' (pid '<unknown>' when no process context); texts per NVIDIA's Xid catalog."""
    who = f"pid={pid}, name=python" if pid else "pid='<unknown>', name=<unknown>"
    return f"NVRM: Xid (PCI:0000:{bus}:00): {code}, {who}, {text}"


XID_TEXT = {
    79: "GPU has fallen off the bus.",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, "
        "subpartition 1.",
    74: "NVLink: fatal error detected on link 5(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
    119: "Timeout after 6s of waiting for RPC response from GPU3 GSP! Expected function 76 (GSP_RM_CONTROL) "
         "(0x20800a4c 0x4).",
}


def oom_kill(pid: int, comm: str, rss_kb: int, cgroup: bool) -> list[str]:
    """torvalds/linux mm/oom_kill.c dump_header ('%s invoked oom-killer: gfp_mask=...') and __oom_kill_process
    ('%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, shmem-rss:%lukB, UID:%u
    pgtables:%lukB oom_score_adj:%hd'; the %s is 'Out of memory' or 'Memory cgroup out of memory')."""
    why = "Memory cgroup out of memory" if cgroup else "Out of memory"
    return [
        f"{comm} invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
        f"{why}: Killed process {pid} ({comm}) total-vm:{rss_kb + 40_000_000}kB, anon-rss:{rss_kb}kB, "
        f"file-rss:81920kB, shmem-rss:0kB, UID:1000 pgtables:{rss_kb // 500}kB oom_score_adj:0",
    ]


def mlx5_cable(bus: str) -> str:
    """torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/events.c port_module(): 'Port module
    event[error]: module %u, %s, %s' through mlx5_core_err_rl (dev_err prefix 'mlx5_core <pci>: fn:line:(pid)')."""
    return (f"mlx5_core 0000:{bus}:00.0: port_module:254:(pid 0): Port module event[error]: module 0, "
            "Cable error, Bad or shorted cable/connector")
