"""Log lines as the upstream projects print them, for the role-rule fixtures (test_exit_reports, test_transport,
test_stragglers). Written here from the sources each function cites, independently of simulate.

A job is a list of hosts of `per_host` ranks each (rank = host index * per_host + local rank); every rank's log is
`<host>/rank<r>.log`, as torchrun's `--log-dir`/`--tee` or a log collector lay them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

T0 = datetime(2026, 11, 29, 10, 2, 3)


@dataclass(frozen=True)
class Job:
    hosts: tuple[str, ...] = ("gpu-a01", "gpu-a02")
    per_host: int = 8

    @property
    def world(self) -> int:
        return len(self.hosts) * self.per_host

    def host(self, rank: int) -> str:
        return self.hosts[rank // self.per_host]

    def ip(self, host: str) -> str:
        return f"10.20.0.{self.hosts.index(host) + 11}"

    def pid(self, rank: int) -> int:
        return 41000 + 37 * rank

    def local(self, rank: int) -> int:
        return rank % self.per_host


def glog(rank: int, level: str, t: datetime, where: str) -> str:
    """torch's c10 log prefix with the rank torch 2.3+ prepends: `[rank3]:[E1129 10:02:03.123456789 file:line]`
    (c10/util/Logging.cpp; the `[rankN]:` prefix comes from TORCH_NCCL's logPrefix / torchrun's --tee)."""
    return f"[rank{rank}]:[{level}{t:%m%d %H:%M:%S}.{t.microsecond:06d}000 {where}] "


def nccl(job: Job, rank: int, level: str, text: str, tid: int = 120) -> str:
    """NCCL's debug header `host:pid:tid [cudaDev] NCCL WARN ...` (NVIDIA/nccl src/debug.cc)."""
    return f"{job.host(rank)}:{job.pid(rank)}:{job.pid(rank) + tid} [{job.local(rank)}] NCCL {level} {text}"


def nccl_init(job: Job, rank: int) -> list[str]:
    """Bootstrap address and the communicator line (NVIDIA/nccl src/bootstrap.cc `Bootstrap : Using`,
    src/init.cc `comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE`)."""
    host, d = job.host(rank), job.local(rank)
    return [nccl(job, rank, "INFO", f"Bootstrap : Using ib0:{job.ip(host)}<0>", tid=0),
            nccl(job, rank, "INFO", f"NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:{job.ip(host)}<0>", tid=0),
            nccl(job, rank, "INFO", f"comm 0x55d0c00{rank:02d}000 rank {rank} nranks {job.world} cudaDev {d} nvmlDev "
                                    f"{d} busId {0x1b + 16 * d:x}000 commId 0x6b3f0c9e1d2a4f10 - Init COMPLETE")]


def steps(rank: int, t: datetime, n: int = 3) -> list[str]:
    return [f"[{t - timedelta(seconds=2 * (n - i)):%Y-%m-%d %H:%M:%S},000] [INFO] [rank{rank}] step {4800 + i} "
            f"loss 2.91 lr 3.0e-04" for i in range(n)]


def ib_retry_exceeded(job: Job, rank: int, peer: str) -> str:
    """NVIDIA/nccl src/transport/net_ib.cc (v2.21): `NET/IB : Got completion from peer %s with status=%d opcode=%d
    len=%d vendor err %d (%s)` - status 12 is IBV_WC_RETRY_EXC_ERR: the peer's HCA stopped answering."""
    return nccl(job, rank, "WARN", f"NET/IB : Got completion from peer {job.ip(peer)}<{50100 + rank}> with status=12 "
                                   "opcode=0 len=0 vendor err 129 (Recv)")


def remote_error(job: Job, rank: int, t: datetime) -> list[str]:
    """What ProcessGroupNCCL prints when NCCL returns ncclRemoteError (NVIDIA/nccl src/init.cc ncclGetErrorString:
    `remote process exited or there was a network error`; pytorch/pytorch torch/csrc/distributed/c10d/
    ProcessGroupNCCL.cpp watchdog: `Process group watchdog thread terminated with exception: NCCL error: ...`)."""
    return [glog(rank, "E", t, "ProcessGroupNCCL.cpp:1595") + f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process "
            "group watchdog thread terminated with exception: NCCL error: remote process exited or there was a "
            "network error, NCCL version 2.21.5",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."]


def conn_reset(job: Job, rank: int, peer: str) -> str:
    """NVIDIA/nccl src/misc/socket.cc (v2.18+): `socketProgressOpt: Call to recv from %s failed : %s`."""
    return nccl(job, rank, "WARN", f"socketProgressOpt: Call to recv from {job.ip(peer)}<{43000 + rank}> failed : "
                                   "Connection reset by peer")


def conn_closed(job: Job, rank: int, peer: str) -> str:
    """NVIDIA/nccl src/misc/socket.cc: `socketProgress: Connection closed by remote peer %s`."""
    return nccl(job, rank, "WARN", f"socketProgress: Connection closed by remote peer {job.ip(peer)}<{43000 + rank}>")


def connect_failed(job: Job, rank: int, ip: str, why: str) -> str:
    """NVIDIA/nccl src/include/socket.h:409 (v2.10-v2.13): `Net : Connect to %s failed : %s` (strerror)."""
    return nccl(job, rank, "WARN", f"Net : Connect to {ip}<54263> failed : {why}")


def watchdog_timeout(rank: int, t: datetime, seq: int, op: str = "ALLREDUCE") -> str:
    """pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp WorkNCCL::checkTimeout: `[Rank N] Watchdog
    caught collective operation timeout: WorkNCCL(SeqNum=..., OpType=..., NumelIn=..., NumelOut=...,
    Timeout(ms)=...) ran for N milliseconds before timing out.`"""
    return (glog(rank, "E", t, "ProcessGroupNCCL.cpp:632") + f"[Rank {rank}] Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=524288, NumelOut=524288, Timeout(ms)=600000) "
            "ran for 600083 milliseconds before timing out.")


def watchdog_status(rank: int, t: datetime, seq: int, enqueued: int, completed: int) -> str:
    """ProcessGroupNCCL.cpp watchdogHandler (torch 2.4-2.6): `Exception (either an error or timeout) detected by
    watchdog at work: N, last enqueued NCCL work: N, last completed NCCL work: M.`"""
    return (glog(rank, "E", t, "ProcessGroupNCCL.cpp:1785") + f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
            f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: "
            f"{enqueued}, last completed NCCL work: {completed}.")


def teardown(rank: int, t: datetime) -> list[str]:
    """ProcessGroupNCCL.cpp WorkNCCL::handleException, printed after the watchdog's failure on every survivor."""
    head = glog(rank, "E", t, "ProcessGroupNCCL.cpp:1704") + f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
    return [head + "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
                   "subsequent GPU operations might run on corrupted/incomplete data.",
            head + "To avoid data inconsistency, we are taking the entire process down."]


def agent_failure(job: Job, host: str, rank: int, code: int, t: datetime, script: str = "train.py") -> list[str]:
    """torchrun's agent on `host` (pytorch/pytorch torch/distributed/elastic/multiprocessing/api.py `failed
    (exitcode: %s) local_rank: %s (pid: %s) of binary: %s`, and the ChildFailedError table of
    torch/distributed/elastic/multiprocessing/errors/__init__.py)."""
    stamp = f"[{t:%Y-%m-%d %H:%M:%S},512]"
    signal = {-9: "Signal 9 (SIGKILL)", -6: "Signal 6 (SIGABRT)", -11: "Signal 11 (SIGSEGV)"}.get(code)
    trace = f"{signal} received by PID {job.pid(rank)}" if signal else "To enable traceback see: " \
        "https://pytorch.org/docs/stable/elastic/errors.html"
    return [f"{stamp} torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: {code}) local_rank: "
            f"{job.local(rank)} (pid: {job.pid(rank)}) of binary: /usr/bin/python3",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            *failure_table(script, f"{t:%Y-%m-%d_%H:%M:%S}", host, rank, job.local(rank), code, job.pid(rank),
                           trace)]


NO_TRACEBACK = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"


def failure_table(script: str, when: str, host: str, rank: int, local: int, code: int, pid: int,
                  traceback: str = NO_TRACEBACK) -> list[str]:
    """The table under torchrun's ChildFailedError line, one root-cause failure and no other (pytorch/pytorch
    torch/distributed/elastic/multiprocessing/errors/__init__.py ChildFailedError.format_msg and _format_failure:
    `rank` is the global rank, `when` is %Y-%m-%d_%H:%M:%S, `error_file: <N/A>` when the worker wrote none)."""
    return ["=" * 60, f"{script} FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
            "Root Cause (first observed failure):", "[0]:", f"  time      : {when}", f"  host      : {host}",
            f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>", f"  traceback : {traceback}", "=" * 60]


def srun_exit(host: str, tasks: str, code: int) -> str:
    """SchedMD/slurm src/srun/launch.c _task_finish: `error("%s: %s %s: Exited with exit code %d", hosts,
    task_str, tasks, rc)`, after srun's `srun: error: ` log prefix."""
    word = "tasks" if ("," in tasks or "-" in tasks) else "task"
    return f"srun: error: {host}: {word} {tasks}: Exited with exit code {code}"


def dmesg_oom(pid: int, t: datetime) -> list[str]:
    """The kernel's OOM killer (linux mm/oom_kill.c `Out of memory: Killed process %d (%s) total-vm:...`), as
    `dmesg -T` prints it."""
    stamp = f"[{t:%a %b %d %H:%M:%S %Y}]"
    return [f"{stamp} python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
            "oom_score_adj=0",
            f"{stamp} Out of memory: Killed process {pid} (python3) total-vm:912345678kB, anon-rss:498765432kB, "
            "file-rss:81234kB, shmem-rss:0kB, UID:1000 pgtables:987654kB oom_score_adj:0"]


def write(root: Path, files: dict[str, list[str]]) -> Path:
    for name, lines in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    return root
