"""The line formats of simulate.training_logs's logs: a rank's start-up, its training steps, the planted failure
cascade, and each node's kernel and torchrun logs. Formats shared with the scenario simulator are reused from
``simulate``, not copied. Every function draws from the RNG it is given, in a fixed order, so that a
(ranks, size, seed, failure) always gives the same bytes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from simulate import (
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
CHANNELS = 16
FAILURES = ("oom_kill", "cuda_oom")


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
    compact: bool = False  # only the lines that say who is who and what failed: 131,072 ranks fit in 200 MB
    survivors: str = "ring"  # who reports the victim's lost connection: its ring neighbours, or every rank


def compact_startup(c: Cluster, r: int) -> Iterator[str]:
    """NCCL's bootstrap address, the interface it uses, and the init line numbering the rank (~400 bytes)."""
    init = _nccl_init(c, r)
    yield from (init[0], init[2], init[-1])


def compact_tail(c: Cluster, r: int, t: datetime, seq: int) -> Iterator[str]:
    """The watchdog's timeout and its sequence-number line, without the teardown banner and C++ stack."""
    yield from _watchdog(c, r, t, seq)[:2]




def _head(c: Cluster, r: int, tid_off: int = 57) -> str:
    pid = c.pids[r]
    return f"{c.host(r)}:{pid}:{pid + tid_off} [{c.local(r)}]"


def startup_lines(c: Cluster, r: int, t: datetime, rng: random.Random) -> Iterator[str]:
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


class FastClock:
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


def step_line(c: Cluster, r: int, s: int, rng: random.Random, clock: FastClock) -> str:
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


def watchdog_tail(c: Cluster, r: int, t: datetime, seq: int) -> Iterator[str]:
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
    yield from compact_startup(c, r) if plan.compact else startup_lines(c, r, START, rng)
    clock = FastClock(c, r)
    for s in range(steps):
        yield step_line(c, r, s, rng, clock)
    t_fail = START + timedelta(seconds=60 + steps * STEP_S + 1.3)
    seq = 4 * steps + 17
    ring = {(plan.victim - 1) % plan.ranks, (plan.victim + 1) % plan.ranks}
    if r == plan.victim:
        if plan.failure == "cuda_oom":
            yield from _cuda_oom(c, r, t_fail, rng)
        return
    if r in ring or plan.survivors == "all":
        yield _reset_by_peer(c, r, plan.victim, t_fail + timedelta(seconds=1 + rng.uniform(0, 0.5)))
    t_timeout = t_fail + timedelta(seconds=600 + rng.uniform(0, 2))
    yield from compact_tail(c, r, t_timeout, seq) if plan.compact else watchdog_tail(c, r, t_timeout, seq)


def dmesg_lines(plan: Plan, c: Cluster, node: int, steps: int, rng: random.Random) -> list[str]:
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


def agent_lines(plan: Plan, c: Cluster, node: int, steps: int, rng: random.Random) -> list[str]:
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
