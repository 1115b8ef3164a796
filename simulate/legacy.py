"""The first simulated job, kept byte for byte: rank 37 of 64 OOM-killed, silent, under five minutes of skew.

The bundled example (examples/oom-killed-rank37), the throughput benchmark (simulate/training_logs.py) and other
packages' fixtures are built from these exact lines; the scenario simulator proper is the rest of this package.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from simulate.cluster import START, Cluster
from simulate.lines import dmesg_oom
from simulate.write import Truth


def _glog(t: datetime) -> str:
    return f"{t:%m%d %H:%M:%S}.{t.microsecond:06d}{t.microsecond % 997:03d}"


def _std(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}"


def _nccl_init(c: Cluster, r: int) -> list[str]:
    h, pid, loc = c.host(r), c.pids[r], c.local(r)
    tid = pid + 57
    head = f"{h}:{pid}:{tid} [{loc}]"
    return [
        f"{head} NCCL INFO Bootstrap : Using eth0:{c.ip(r)}<0>",
        f"{head} NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
        f"{head} NCCL INFO NET/Socket : Using [0]eth0:{c.ip(r)}<0>",
        f"{head} NCCL INFO Using network Socket",
        f"{head} NCCL INFO comm 0x{0x55d0c0000000 + r * 4096:x} rank {r} nranks {c.world_size} cudaDev {loc} "
        f"nvmlDev {loc} busId {0x1b000 + loc * 0x10000:x} commId 0x6b3f0c9e1d2a4f10 - Init COMPLETE",
    ]


def _training(c: Cluster, r: int, steps: int, until: datetime) -> list[str]:
    lines = []
    for s in range(steps):
        t = until - timedelta(seconds=(steps - s) * 2.1)
        loss = 2.9 - 0.0004 * s + c.rng.uniform(-0.02, 0.02)
        lines.append(f"[{_std(c.clock(r, t))}] [INFO] [rank{r}] step {4800 + s} loss {loss:.4f} lr 3.0e-04 "
                     f"grad_norm {c.rng.uniform(0.8, 1.3):.3f} tokens/s 41{c.rng.randrange(100, 999)}")
    return lines


def _watchdog(c: Cluster, r: int, t: datetime, seq: int) -> list[str]:
    ct = c.clock(r, t)
    work = f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=25165824, NumelOut=25165824, Timeout(ms)=600000)"
    ran = 600000 + c.rng.randrange(10, 900)
    return [
        f"[rank{r}]:[E{_glog(ct)} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation "
        f"timeout: {work} ran for {ran} milliseconds before timing out.",
        f"[rank{r}]:[E{_glog(ct)} ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank {r}]  failure "
        f"detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, last completed "
        f"work: {seq - 1}",
        f"[rank{r}]:[E{_glog(ct)} ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process "
        f"group watchdog thread terminated with exception: [Rank {r}] Watchdog caught collective operation "
        f"timeout: {work} ran for {ran} milliseconds before timing out.",
        f"[rank{r}]:[E{_glog(ct)} ProcessGroupNCCL.cpp:630] [Rank {r}] Some NCCL operations have failed or timed "
        "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/"
        "incomplete data.",
        f"[rank{r}]:[E{_glog(ct)} ProcessGroupNCCL.cpp:636] [Rank {r}] To avoid data inconsistency, we are taking "
        "the entire process down.",
    ]


def _reset_by_peer(c: Cluster, r: int, victim: int, t: datetime) -> str:
    pid = c.pids[r]
    return (f"{c.host(r)}:{pid}:{pid + 61} [{c.local(r)}] misc/socket.cc:538 NCCL WARN socketProgressOpt: Call to "
            f"recv from {c.ip(victim)}<{40000 + victim}> failed : Connection reset by peer")


def _dmesg_oom(c: Cluster, victim: int, t: datetime) -> list[str]:
    return dmesg_oom(c, victim, t)  # kept under its old name: simulate.training_logs and the examples use it


def oom_killed_rank(out: Path, world_size: int = 64, victim: int = 37, seed: int = 0) -> Truth:
    """One rank SIGKILLed by the host OOM killer: it prints nothing; 63 ranks report timeouts and resets."""
    c = Cluster(world_size, seed)
    t_kill = START + timedelta(minutes=14, seconds=c.rng.uniform(0, 30))
    seq = 4821
    truth = Truth("oom_killed_rank", victim, c.host(victim), "oom", world_size,
                  rank_hosts={r: c.host(r) for r in range(world_size)})
    neighbours = {(victim - 1) % world_size, (victim + 1) % world_size}
    for r in range(world_size):
        lines = _nccl_init(c, r) + _training(c, r, 40, t_kill)
        if r != victim:
            if r in neighbours:
                lines.append(_reset_by_peer(c, r, victim, t_kill + timedelta(seconds=1)))
            lines += _watchdog(c, r, t_kill + timedelta(seconds=600 + c.rng.uniform(0, 2)), seq)
        path = out / c.host(r) / f"rank{r}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        truth.files.append(path)
    dmesg = out / c.host(victim) / "dmesg.log"
    noise = [f"[{c.clock(victim, t_kill - timedelta(hours=2)):%a %b %d %H:%M:%S %Y}] "
             "mlx5_core 0000:3b:00.0: mlx5_cmd_check:810: ... (syndrome (0x0))"]
    dmesg.write_text("\n".join(noise + _dmesg_oom(c, victim, t_kill)) + "\n")
    truth.files.append(dmesg)
    return truth
