"""Realistic multi-rank training logs of any size, with one planted failure cascade, for benchmarks.

    python -m bench.generate OUT --ranks 64 --size 200MB --seed 1 [--failure oom_kill|cuda_oom] [--jobs 2]

Layout (``firstfault diagnose OUT/logs`` reads it as a job directory)::

    OUT/truth.json                    what was planted (victim rank/host, failure, sizes) -- outside logs/
    OUT/logs/node004/rank37.log       one file per rank, ranks grouped 8 per node directory
    OUT/logs/node004/dmesg.log        per-node kernel log (benign lines; the OOM kill on the victim's node)
    OUT/logs/node004/torchrun.log     per-node torchrun agent log (startup, then the failure table)

Each rank log is: start-up noise (UserWarnings, c10d socket warning, NCCL INFO bootstrap/ring/channel lines),
then N training steps (step/loss lines, data-loader lines, repeated UserWarning/FutureWarning/DeprecationWarning
pairs, periodic NCCL INFO sub-communicator set-up, checkpoint lines), then the cascade: the victim either is
OOM-killed by the host (``oom_kill``: silent, kernel log on its node) or raises ``torch.OutOfMemoryError``
(``cuda_oom``); its ring neighbours report "Connection reset by peer"; every other rank reports the PyTorch NCCL
watchdog timeout ~600 s later. Line formats are those of ``firstfault.simulate`` (reused, not copied) plus the
other real formats listed above. N is calibrated so the whole tree is about ``--size`` bytes.

Writing streams line batches to disk (memory stays bounded by one batch whatever the size); output is
deterministic for a given (ranks, size, seed, failure): every rank has its own seeded RNG, so ``--jobs`` does not
change the bytes. Sizes: decimal units (1 MB = 10**6 bytes); KiB/MiB/GiB are binary.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

from firstfault.simulate import (
    GPUS_PER_NODE,
    START,
    Cluster,
    _dmesg_oom,
    _glog,
    _nccl_init,
    _reset_by_peer,
    _std,
    _watchdog,
)

STEP_S = 2.1  # simulated seconds per training step
FIRST_STEP = 1
FLUSH_BYTES = 1 << 18  # bytes buffered per file before a write
CHANNELS = 16
FAILURES = ("oom_kill", "cuda_oom")

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 200MB, 1.5GB, 512MiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


@dataclass
class Plan:
    out: str
    ranks: int
    size: int
    seed: int
    failure: str
    victim: int
    steps: int = 0
    t_fail: str = ""


# ---------------------------------------------------------------------------------------------------------------
# Line formats


def _head(c: Cluster, r: int, tid_off: int = 57) -> str:
    pid = c.pids[r]
    return f"{c.host(r)}:{pid}:{pid + tid_off} [{c.local(r)}]"


def _startup(c: Cluster, r: int, t: datetime, rng: random.Random) -> Iterator[str]:
    ts = _std(c.clock(r, t))
    if r == 0:
        yield ("[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - "
               "Address family not supported by protocol).")
    yield ("/usr/local/lib/python3.11/dist-packages/torch/_utils.py:831: UserWarning: TypedStorage is deprecated. "
           "It will be removed in the future and UntypedStorage will be the only storage class. This should only "
           "matter to you if you are using storages directly.  To access UntypedStorage directly, use "
           "tensor.untyped_storage() instead of tensor.storage()")
    yield "  return self.fget.__get__(instance, owner)()"
    yield (f"[{ts}] [INFO] [rank{r}] world_size={c.world_size} local_rank={c.local(r)} "
           f"master_addr=node000 master_port=29500 backend=nccl")
    head = _head(c, r)
    if r == 0:
        yield f"{head} NCCL INFO NCCL version 2.21.5+cuda12.4"
    init = _nccl_init(c, r)
    yield from init[:-1]
    yield f"{head} NCCL INFO cudaDriverVersion 12040"
    yield f"{head} NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0"
    yield f"{head} NCCL INFO Using non-device net plugin version 0"
    yield f"{head} NCCL INFO Setting affinity for GPU {c.local(r)} to ffffff,ffffffff"
    if r == 0:
        ring = " ".join(f"{x:4d}" for x in range(c.world_size))
        for ch in range(CHANNELS):
            yield f"{head} NCCL INFO Channel {ch:02d}/{CHANNELS:02d} : {ring}"
    nxt, prv = (r + 1) % c.world_size, (r - 1) % c.world_size
    yield (f"{head} NCCL INFO Trees [0] {nxt}/-1/-1->{r}->{prv} [1] {nxt}/-1/-1->{r}->{prv} "
           f"[2] -1/-1/-1->{r}->{prv} [3] {nxt}/-1/-1->{r}->-1")
    yield f"{head} NCCL INFO P2P Chunksize set to 131072"
    for ch in range(CHANNELS):
        via = "P2P/IPC/read" if c.host(nxt) == c.host(r) else "NET/Socket/0"
        yield f"{head} NCCL INFO Channel {ch:02d}/0 : {r}[{c.local(r)}] -> {nxt}[{c.local(nxt)}] via {via}"
    yield f"{head} NCCL INFO Connected all rings"
    yield f"{head} NCCL INFO Connected all trees"
    yield f"{head} NCCL INFO threadThresholds 8/8/64 | {8 * c.world_size}/8/64 | 512 | 512"
    yield f"{head} NCCL INFO {CHANNELS} coll channels, 0 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer"  # noqa: E501
    yield init[-1]
    yield (f"[{ts}] [INFO] [rank{r}] model: 7.24B params, FSDP FULL_SHARD, bf16, seq_len 4096, "
           f"global_batch {c.world_size * 4}")


def _subcomm(c: Cluster, r: int, step: int, rng: random.Random) -> Iterator[str]:
    """A node-local communicator created mid-run (eval / checkpoint groups): ~40 NCCL INFO lines."""
    head = _head(c, r, 211)
    loc = c.local(r)
    comm = f"0x{0x7f3a00000000 + (step << 12) + r * 64:x}"
    yield f"{head} NCCL INFO Using non-device net plugin version 0"
    yield f"{head} NCCL INFO Using network Socket"
    yield (f"{head} NCCL INFO ncclCommInitRank comm {comm} rank {loc} nranks {GPUS_PER_NODE} cudaDev {loc} "
           f"nvmlDev {loc} busId {0x1b000 + loc * 0x10000:x} commId 0x{rng.getrandbits(64):016x} - Init START")
    yield f"{head} NCCL INFO Setting affinity for GPU {loc} to ffffff,ffffffff"
    nxt = (loc + 1) % GPUS_PER_NODE
    for ch in range(CHANNELS):
        yield f"{head} NCCL INFO Channel {ch:02d}/0 : {loc}[{loc}] -> {nxt}[{nxt}] via P2P/IPC/read"
    yield f"{head} NCCL INFO Connected all rings"
    for ch in range(CHANNELS // 2):
        yield f"{head} NCCL INFO Channel {ch:02d}/0 : {nxt}[{nxt}] -> {loc}[{loc}] via P2P/IPC/read"
    yield f"{head} NCCL INFO Connected all trees"
    yield f"{head} NCCL INFO threadThresholds 8/8/64 | 64/8/64 | 512 | 512"
    yield f"{head} NCCL INFO {CHANNELS} coll channels, 0 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer"  # noqa: E501
    yield (f"{head} NCCL INFO comm {comm} rank {loc} nranks {GPUS_PER_NODE} cudaDev {loc} nvmlDev {loc} "
           f"busId {0x1b000 + loc * 0x10000:x} commId 0x{rng.getrandbits(64):016x} - Init COMPLETE")


_USER_WARNINGS = (
    ("/usr/local/lib/python3.11/dist-packages/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: "
     "the use_reentrant parameter should be passed explicitly. In version 2.4 we will raise an exception if "
     "use_reentrant is not passed. use_reentrant=False is recommended, but if you need to preserve the current "
     "default behavior, you can pass use_reentrant=True. Refer to docs for more details on the differences "
     "between the two variants.", "  warnings.warn("),
    ("/usr/local/lib/python3.11/dist-packages/torch/distributed/fsdp/_state_dict_utils.py:773: UserWarning: "
     "When using ``NO_SHARD`` for ``ShardingStrategy``, full_state_dict will be returned.",
     "  warnings.warn("),
    ("/workspace/train/data.py:88: UserWarning: The given NumPy array is not writable, and PyTorch does not "
     "support non-writable tensors. This means writing to this tensor will result in undefined behavior.",
     "  tokens = torch.from_numpy(buf[start:stop])"),
)
_FUTURE = ("/workspace/train/loop.py:57: FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. Please "
           "use `torch.amp.autocast('cuda', args...)` instead.", "  with torch.cuda.amp.autocast(dtype=torch.bfloat16):")  # noqa: E501
_DEPRECATION = ("/usr/local/lib/python3.11/dist-packages/transformers/modeling_utils.py:1141: DeprecationWarning: "
                "The `use_cache` argument is deprecated and will be removed in v5; pass it to generate() instead.",
                "  warnings.warn(")


class _FastClock:
    """``_std(c.clock(r, START + offset))`` for many offsets, without datetime arithmetic in the hot loop."""

    def __init__(self, c: Cluster, r: int) -> None:
        base = c.clock(r, START)
        midnight = base.replace(hour=0, minute=0, second=0, microsecond=0)
        self._midnight = midnight
        self._base = (base - midnight).total_seconds()
        self._days: dict[int, str] = {}

    def std(self, offset: float) -> str:
        day, rem = divmod(self._base + offset, 86400.0)
        date = self._days.get(int(day))
        if date is None:
            date = self._days[int(day)] = f"{self._midnight + timedelta(days=int(day)):%Y-%m-%d}"
        ms = int(rem * 1000)
        sec, ms = divmod(ms, 1000)
        h, sec = divmod(sec, 3600)
        m, sec = divmod(sec, 60)
        return f"{date} {h:02d}:{m:02d}:{sec:02d},{ms:03d}"


def _step(c: Cluster, r: int, s: int, rng: random.Random, clock: _FastClock) -> str:
    """One training step's lines, joined (the hot path: one step line, and now and then something else)."""
    rand = rng.random
    ts = clock.std(60 + s * STEP_S + 0.2 * rand())
    n = FIRST_STEP + s
    loss = 2.9 * (1 + 3000 / (s + 3000)) / 2 + 0.04 * rand() - 0.02
    line = (f"[{ts}] [INFO] [rank{r}] step {n} loss {loss:.4f} lr 3.0e-04 grad_norm {0.8 + 0.5 * rand():.3f} "
            f"tokens/s 41{100 + int(899 * rand())}")
    m = s % 1000
    if m % 25 != 7 and m % 50 != 13 and m % 200 != 101 and m not in (333, 500, 999):
        return line
    out = [line]
    if m % 25 == 7:
        out.append(f"[{ts}] [INFO] [rank{r}] data: epoch {s // 20000} shard {(s // 25 + r) % 1024}/1024 "
                   f"samples {s * 4} prefetch 8 wait_ms {0.1 + 8.9 * rand():.1f}")
    if m % 50 == 13:
        out += _USER_WARNINGS[(s // 50) % len(_USER_WARNINGS)]
    if m % 200 == 101:
        out += _FUTURE
    if m == 333:
        out += _DEPRECATION
    if m == 500:
        out += _subcomm(c, r, s, rng)
    if m == 999:
        out.append(f"[{ts}] [INFO] [rank{r}] checkpoint: saving step {n} to /ckpt/run-7b/step_{n}/rank{r:05d}.distcp")
        out.append(f"[{ts}] [INFO] [rank{r}] checkpoint: saved step {n} ({1.7 + 0.2 * rand():.2f} GiB) in "
                   f"{20 + 40 * rand():.1f}s")
        if r == 0:
            out.append(f"[{ts}] [INFO] [rank0] eval: step {n} val_loss {loss + 0.05:.4f} ppl {2.718 ** (loss + 0.05):.2f}")  # noqa: E501
    return "\n".join(out)


def _cuda_oom(c: Cluster, r: int, t: datetime, rng: random.Random) -> Iterator[str]:
    p = f"[rank{r}]:"
    pid = c.pids[r]
    frames = [
        ('/workspace/train/main.py", line 412, in <module>', "main()"),
        ('/workspace/train/main.py", line 388, in main', "trainer.fit()"),
        ('/workspace/train/loop.py", line 74, in fit', "loss.backward()"),
        ('/usr/local/lib/python3.11/dist-packages/torch/_tensor.py", line 581, in backward',
         "torch.autograd.backward("),
        ('/usr/local/lib/python3.11/dist-packages/torch/autograd/__init__.py", line 347, in backward',
         "_engine_run_backward("),
        ('/usr/local/lib/python3.11/dist-packages/torch/autograd/graph.py", line 825, in _engine_run_backward',
         "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass"),
    ]
    yield f"{p} Traceback (most recent call last):"
    for where, code in frames:
        yield f'{p}   File "{where}'
        yield f"{p}     {code}"
    yield f"{p}            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"
    yield (f"{p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {c.local(r)} has a "
           f"total capacity of 79.15 GiB of which 1.{rng.randrange(10, 99)} GiB is free. Process {pid} has 78.07 "
           "GiB memory in use. Of the allocated memory 74.12 GiB is allocated by PyTorch, and 2.31 GiB is reserved "
           "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
           "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    yield (f"{p}[W{_glog(c.clock(r, t))} ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has NOT been "
           "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
           "destroy_process_group to ensure that any pending NCCL operations have finished in this process. In "
           "rare cases this process can exit before this point and block the progress of another member of the "
           "process group. This constraint has always been present,  but this warning has only been added since "
           "PyTorch 2.4 (function operator())")


def _watchdog_tail(c: Cluster, r: int, t: datetime, seq: int) -> Iterator[str]:
    yield from _watchdog(c, r, t, seq)
    p = f"[rank{r}]:"
    yield f"{p}Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:634 (most recent call first):"  # noqa: E501
    frames = [
        "c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b2c16c446 in /usr/local/lib/python3.11/dist-packages/torch/lib/libc10.so)",  # noqa: E501
        "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f3ae0a4e772 in /usr/local/lib/python3.11/dist-packages/torch/lib/libtorch_cuda.so)",  # noqa: E501
        "c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f3ae0a55bb3 in /usr/local/lib/python3.11/dist-packages/torch/lib/libtorch_cuda.so)",  # noqa: E501
        "c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f3ae0a5761d in /usr/local/lib/python3.11/dist-packages/torch/lib/libtorch_cuda.so)",  # noqa: E501
        "<unknown function> + 0xd6df4 (0x7f3b2c8d6df4 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
        "<unknown function> + 0x8609 (0x7f3b3a2a3609 in /lib/x86_64-linux-gnu/libpthread.so.0)",
        "clone + 0x43 (0x7f3b3a3dd353 in /lib/x86_64-linux-gnu/libc.so.6)",
    ]
    for i, f in enumerate(frames):
        yield f"{p}frame #{i}: {f}"


def rank_lines(plan: Plan, c: Cluster, r: int, rng: random.Random, steps: int) -> Iterator[str]:
    yield from _startup(c, r, START, rng)
    clock = _FastClock(c, r)
    for s in range(steps):
        yield _step(c, r, s, rng, clock)
    t_fail = START + timedelta(seconds=60 + steps * STEP_S + 1.3)
    seq = 4 * steps + 17
    ring = {(plan.victim - 1) % plan.ranks, (plan.victim + 1) % plan.ranks}
    if r == plan.victim:
        if plan.failure == "cuda_oom":
            yield from _cuda_oom(c, r, t_fail, rng)
        return
    if r in ring:
        yield _reset_by_peer(c, r, plan.victim, t_fail + timedelta(seconds=1 + rng.uniform(0, 0.5)))
    yield from _watchdog_tail(c, r, t_fail + timedelta(seconds=600 + rng.uniform(0, 2)), seq)


def _dmesg(plan: Plan, c: Cluster, node: int, steps: int, rng: random.Random) -> list[str]:
    r0 = node * GPUS_PER_NODE
    def stamp(t: datetime) -> str:
        return f"[{c.clock(r0, t):%a %b %d %H:%M:%S %Y}]"
    t_boot = START - timedelta(hours=3)
    lines = [
        f"{stamp(t_boot)} Linux version 5.15.0-119-generic (buildd@lcy02-amd64-059) (gcc 11.4.0) #129-Ubuntu SMP",
        f"{stamp(t_boot)} nvidia: loading out-of-tree module taints kernel.",
        f"{stamp(t_boot)} NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024",
        f"{stamp(t_boot)} mlx5_core 0000:3b:00.0: mlx5_cmd_check:810: ... (syndrome (0x0))",
        f"{stamp(START)} IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    ]
    t_fail = START + timedelta(seconds=60 + steps * STEP_S + 1.3)
    if plan.failure == "oom_kill" and plan.victim // GPUS_PER_NODE == node:
        c.rng = rng
        lines += _dmesg_oom(c, plan.victim, t_fail - timedelta(seconds=0.4))
    return lines


def _agent(plan: Plan, c: Cluster, node: int, steps: int, rng: random.Random) -> list[str]:
    """torchrun's log on one node: start-up, then the first local failure and its failure table."""
    ranks = [r for r in range(node * GPUS_PER_NODE, min(plan.ranks, (node + 1) * GPUS_PER_NODE))]
    t_fail = START + timedelta(seconds=60 + steps * STEP_S + 1.3)
    lines = [
        "W1129 10:00:00.000000 139871 torch/distributed/run.py:793] ",
        "W1129 10:00:00.000000 139871 torch/distributed/run.py:793] *****************************************",
        "W1129 10:00:00.000000 139871 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable "
        "for each process to be 1 in default, to avoid your system being overloaded, please further tune the "
        "variable for optimal performance in your application as needed. ",
        "W1129 10:00:00.000000 139871 torch/distributed/run.py:793] *****************************************",
    ]
    if plan.victim in ranks:
        first, t_first = plan.victim, t_fail + timedelta(seconds=1)
        code, why = ((-9, f"Signal 9 (SIGKILL) received by PID {c.pids[first]}") if plan.failure == "oom_kill"
                     else (1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"))
    else:
        first, t_first = ranks[0], t_fail + timedelta(seconds=603)
        code, why = -6, f"Signal 6 (SIGABRT) received by PID {c.pids[first]}"
    glog = _glog(c.clock(first, t_first))
    for r in ranks:
        if r != first:
            lines.append(f"W{glog} 139871 torch/distributed/elastic/multiprocessing/api.py:897] Sending process "
                         f"{c.pids[r]} closing signal SIGTERM")
    lines.append(f"E{glog} 139871 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: {code}) "
                 f"local_rank: {c.local(first)} (pid: {c.pids[first]}) of binary: /usr/bin/python3")
    lines += [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "/workspace/train/main.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {c.clock(first, t_first):%Y-%m-%d_%H:%M:%S}",
        f"  host      : {c.host(first)}",
        f"  rank      : {first} (local_rank: {c.local(first)})",
        f"  exitcode  : {code} (pid: {c.pids[first]})",
        "  error_file: <N/A>",
        f"  traceback : {why}",
        "============================================================",
    ]
    return lines


# ---------------------------------------------------------------------------------------------------------------
# Writing


def _cluster(plan: Plan, rank: int | None) -> tuple[Cluster, random.Random]:
    c = Cluster(plan.ranks, plan.seed)
    rng = random.Random(f"{plan.seed}:{rank}")
    c.rng = rng  # the simulate helpers draw from c.rng: make it per-rank so output is order-independent
    return c, rng


def _write_lines(path: Path, lines: Iterator[str]) -> int:
    written = 0
    batch: list[str] = []
    pending = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            batch.append(line)
            pending += len(line) + 1
            if pending >= FLUSH_BYTES:
                fh.write("\n".join(batch) + "\n")
                written += pending
                batch.clear()
                pending = 0
        if batch:
            fh.write("\n".join(batch) + "\n")
            written += pending
    return written


def _logs(plan: Plan) -> Path:
    return Path(plan.out) / "logs"


def write_rank(plan: Plan, r: int) -> int:
    c, rng = _cluster(plan, r)
    path = _logs(plan) / c.host(r) / f"rank{r}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write_lines(path, rank_lines(plan, c, r, rng, plan.steps))


def write_node(plan: Plan, node: int) -> int:
    c, rng = _cluster(plan, -1 - node)
    d = _logs(plan) / f"node{node:03d}"
    d.mkdir(parents=True, exist_ok=True)
    return (_write_lines(d / "dmesg.log", iter(_dmesg(plan, c, node, plan.steps, rng)))
            + _write_lines(d / "torchrun.log", iter(_agent(plan, c, node, plan.steps, rng))))


def calibrate(plan: Plan) -> int:
    """Steps per rank so the tree totals about plan.size bytes (measured on a sample of steps of rank 1)."""
    r = 1 % plan.ranks
    c, rng = _cluster(plan, r)
    fixed = sum(len(x) + 1 for x in _startup(c, r, START, rng))
    fixed += sum(len(x) + 1 for x in _watchdog_tail(c, r, START, 1))
    sample = 2000
    clock = _FastClock(c, r)
    per_step = sum(len(_step(c, r, s, rng, clock)) + 1 for s in range(sample)) / sample
    # rank 0 prints the full ring once per channel: NCCL's ring line grows with the world size
    ring0 = CHANNELS * (5 * plan.ranks + 60)
    nodes = max(1, plan.ranks // GPUS_PER_NODE)
    side = nodes * 2600  # dmesg + torchrun logs
    budget = plan.size - side - ring0 - plan.ranks * fixed
    return max(1, int(budget / plan.ranks / per_step))


def generate(out: Path, ranks: int, size: int, seed: int, failure: str = "oom_kill", victim: int | None = None,
             jobs: int = 1, quiet: bool = False) -> dict[str, object]:
    if not ranks >= 1:
        raise ValueError("ranks must be >= 1")
    if failure not in FAILURES:
        raise ValueError(f"failure must be one of {FAILURES}")
    if victim is None:
        victim = random.Random(f"victim:{seed}:{ranks}").randrange(ranks)
    plan = Plan(str(out), ranks, size, seed, failure, victim)
    plan.steps = calibrate(plan)
    plan.t_fail = (START + timedelta(seconds=60 + plan.steps * STEP_S + 1.3)).isoformat()
    logs = _logs(plan)
    if logs.exists() and any(logs.iterdir()):
        raise FileExistsError(f"{logs} is not empty; remove it first")
    logs.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    nodes = max(1, (ranks + GPUS_PER_NODE - 1) // GPUS_PER_NODE)
    total = 0
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            total += sum(pool.map(write_rank, [plan] * ranks, range(ranks), chunksize=max(1, ranks // (jobs * 8))))
    else:
        for r in range(ranks):
            total += write_rank(plan, r)
            if not quiet and sys.stderr.isatty():
                sys.stderr.write(f"\r  rank {r + 1}/{ranks}  {human(total)}")
    for n in range(nodes):
        total += write_node(plan, n)
    elapsed = time.perf_counter() - t0
    if not quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    c = Cluster(ranks, seed)
    truth: dict[str, object] = {
        **asdict(plan),
        "scenario": f"bench_{failure}",
        "victim_host": c.host(victim),
        "signature_hint": "oom",
        "logs": str(logs),
        "bytes": total,
        "files": ranks + 2 * nodes,
        "generate_seconds": round(elapsed, 2),
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="output directory (logs go to OUT/logs, the answer to OUT/truth.json)")
    p.add_argument("--ranks", type=int, default=64, help="world size, 8..4096 (8 ranks per node)")
    p.add_argument("--size", type=parse_size, default=parse_size("200MB"), help="total size, e.g. 10MB, 2GB")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--failure", choices=FAILURES, default="oom_kill")
    p.add_argument("--victim", type=int, default=None, help="the failing rank (default: chosen by the seed)")
    p.add_argument("--jobs", type=int, default=1, help="writer processes (output is identical for any value)")
    a = p.parse_args(argv)
    if a.victim is not None and not 0 <= a.victim < a.ranks:
        p.error("--victim must be a rank in [0, ranks)")
    try:
        truth = generate(a.out, a.ranks, a.size, a.seed, a.failure, a.victim, a.jobs)
    except FileExistsError as exc:
        p.error(str(exc))
    mbps = truth["bytes"] / 1e6 / max(truth["generate_seconds"], 1e-9)  # type: ignore[operator]
    print(f"wrote {human(truth['bytes'])} in {truth['files']} files under {truth['logs']} "  # type: ignore[arg-type]
          f"({truth['steps']} steps/rank, {mbps:.0f} MB/s); victim rank {truth['victim']} on "
          f"{truth['victim_host']} ({truth['failure']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
