"""The formats only the hostile knobs write, each as its upstream source prints it (see sources.py for the table).

NCCL lines are those of v2.21.5 (the version lines.NCCL_VERSION names); Slurm's of 24.11; PyTorch's of its
main branch of 2025 (ProcessGroupNCCL's logPrefix() ends in a space, hence the double space some lines show).
"""

from __future__ import annotations

from datetime import datetime

from simulate import lines as L
from simulate.cluster import Cluster, glog

PG = "[PG ID 0 PG GUID 0(default_pg) Rank {r}] "  # ProcessGroupNCCL::logPrefix(), trailing space included
# signal -> (its name, strsignal()'s text as srun prints it, whether a core is dumped)
_SIGNALS = {9: ("SIGKILL", "Killed", False), 6: ("SIGABRT", "Aborted", True),
            11: ("SIGSEGV", "Segmentation fault", True), 15: ("SIGTERM", "Terminated", False)}


def ib_completion(c: Cluster, r: int, peer: int, port: int, roce: bool) -> str:
    """net_ib.cc:1909 ncclIbTest: a work completion in error; the GIDs follow only on RoCE (link layer Ethernet).
    status 12 is IBV_WC_RETRY_EXC_ERR, vendor err 129 mlx5's transport retry counter exceeded."""
    gids = f" localGid ::ffff:{c.ib_ip(r)} remoteGids ::ffff:{c.ib_ip(peer)}" if roce else ""
    return (f"{L.head(c, r, 83)} transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer "
            f"{c.ib_ip(peer)}<{port}> with status=12 opcode=1 len=0 vendor err 129 (Recv){gids}")


def closed_by_peer(c: Cluster, r: int, peer: int, port: int) -> str:
    """socket.cc:50 socketProgress; the peer as ncclSocketToString(.., 0) gives it (numeric here; names.py
    resolves it to the reverse-DNS name when the host-alias knob is on)."""
    return (f"{L.head(c, r, 61)} misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer "
            f"{c.ip(peer)}<{port}>")


def nccl_remote_error(r: int, warn: str) -> list[str]:
    """What the survivor's Python sees: c10d's DistBackendError with NCCL's string for ncclRemoteError and
    NCCLUtils.cpp's detail for it, then NCCL's last WARN (ncclGetLastError)."""
    p = f"[rank{r}]:"
    return [f"{p} torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            f"NCCLUtils.hpp:317, remote process exited or there was a network error, NCCL version {L.NCCL_VERSION}",
            f"{p} ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
            "prematurely.",
            f"{p} Last error:", f"{p} {warn.split('NCCL WARN ', 1)[-1]}"]


def work_update(c: Cluster, r: int, t: datetime, enqueued: int, completed: int) -> str:
    """Watchdog::runLoop's C10_LOG_EVERY_MS(INFO) progress line, printed with TORCH_CPP_LOG_LEVEL=INFO."""
    return (f"[rank{r}]:[I{glog(c.clock(r, t))} ProcessGroupNCCL.cpp:2048] {PG.format(r=r)}NCCL Work update "
            f"periodically: last enqueued NCCL work: {enqueued}, last completed NCCL work: {completed}.")


def failure_entry(idx: int, t: datetime, fqdn: str, rank: int, local: int, code: int, pid: int, why: str) -> list[str]:
    """_FAILURE_FORMAT_TEMPLATE, one failure: rank is the GLOBAL rank, host socket.getfqdn()."""
    return [f"[{idx}]:", f"  time      : {t:%Y-%m-%d_%H:%M:%S}", f"  host      : {fqdn}",
            f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>", f"  traceback : {why}"]


def signal_why(code: int, pid: int) -> str:
    """ProcessFailure.__post_init__'s message when the worker wrote no error file."""
    if code < 0:
        return f"Signal {-code} ({_SIGNALS.get(-code, ('<N/A>',))[0]}) received by PID {pid}"
    return "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"


def srun_exit(host: str, tasks: list[int], code: int) -> str:
    """_task_finish: one message per node and exit status; tasks as srun's ranged list."""
    word = "task" if len(tasks) == 1 else "tasks"
    if code >= 0:
        return f"srun: error: {host}: {word} {ranges(tasks)}: Exited with exit code {code}"
    _, text, core = _SIGNALS.get(-code, ("", f"Signal {-code}", False))
    return f"srun: error: {host}: {word} {ranges(tasks)}: {text}{' (core dumped)' if core else ''}"


def ranges(ids: list[int]) -> str:
    """srun's ranged task list: 0-3,5."""
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def srun_label(task: int, ntasks: int) -> str:
    """write_labelled_message.c: ``%*d: `` with the width of the largest task id."""
    return f"{task:>{len(str(max(0, ntasks - 1)))}}: "


def step_cancelled(job_id: int, host: str, t: datetime) -> str:
    """slurmstepd's notice when the step is signalled (srun --kill-on-bad-exit, scancel)."""
    return f"slurmstepd: error: *** STEP {job_id}.0 ON {host} CANCELLED AT {t:%Y-%m-%dT%H:%M:%S} ***"


def journal_line(t: datetime, host: str, message: str) -> str:
    """journalctl -k / rsyslog's traditional format: the kernel's hostname before ``kernel:``."""
    return f"{t:%b %d %H:%M:%S} {host} kernel: {message}"


def dmesg_raw(uptime_s: float, message: str) -> str:
    """printk's print_time: seconds since boot, no host, no wall clock."""
    return f"[{uptime_s:12.6f}] {message}"
