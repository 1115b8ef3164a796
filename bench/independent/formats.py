"""Line prefixes and multi-line blocks as the upstream programs print them.

Each template is written here from the upstream source named above it; none is copied from firstfault.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from .topology import Job, Node

_SEV_WORD = {"I": "INFO", "W": "WARNING", "E": "ERROR"}


def _md(d: datetime) -> str:
    # c10/util/Logging.cpp: MessageLogger::MessageLogger writes (tm_mon + 1) * 100 + tm_mday, unpadded ("515")
    return str((d.month) * 100 + d.day)


def c10(job: Job, rank: int, t: float, sev: str, src: str, msg: str) -> str:
    """A C++ log line from libtorch (ProcessGroupNCCL, TCPStore, ...).

    c10/util/Logging.cpp: MessageLogger::MessageLogger (torch >= 2.2) prefixes '[rank<GLOBAL_RANK>]:' then
    '[<sev><MMDD> <HH:MM:SS>.<9 digits of CLOCK_MONOTONIC ns> <file>:<line>] '. Older releases printed only
    '[<sev> <file>:<line>] ' (the commented-out time fields in the same function's old version).
    """
    if not job.torch_new:
        return f"[{sev} {src}] {msg}"
    node, _ = job.by_rank(rank)
    d = job.local_time(node, t)
    ns = int((uptime(node, t) % 1) * 1e9)  # CLOCK_MONOTONIC's sub-second part: steady, unrelated to the wall clock
    return f"[rank{rank}]:[{sev}{_md(d)} {d:%H:%M:%S}.{ns:09d} {src}] {msg}"


def agent(job: Job, node: Node, t: float, sev: str, module: str, lineno: int, msg: str) -> str:
    """A torchelastic agent log line.

    torch/_logging/_internal.py: TorchLogsFormatter.format ('<L><MMDD HH:MM:SS>.<usec> <pid> <path>:<line>] ')
    in torch >= 2.4; before that the logging default '<LEVEL>:<logger name>:<msg>'.
    """
    if not job.torch_new:
        return f"{_SEV_WORD[sev]}:{module}:{msg}"
    d = job.local_time(node, t)
    path = module.replace(".", "/") + ".py"
    if job.slurm_id % 2:  # make_module_path_relative leaves 'site-packages/' on for some installs: per job
        path = "site-packages/" + path
    return f"[{sev}{d:%m%d %H:%M:%S}.{d.microsecond:06d} {job.agent_pid[node.index]} {path}:{lineno}] {msg}"


def nccl_info(job: Job, rank: int, msg: str) -> str:
    # NVIDIA/nccl src/debug.cc: ncclDebugLog: '<host>:<pid>:<tid> [<cudaDev>] NCCL INFO <msg>'
    node, lr = job.by_rank(rank)
    return f"{node.short}:{job.pid(rank)}:{job.pid(rank) + 120 + lr} [{lr}] NCCL INFO {msg}"


def nccl_warn(job: Job, rank: int, where: str, msg: str) -> str:
    # NVIDIA/nccl src/debug.cc: ncclDebugLog: '<host>:<pid>:<tid> [<cudaDev>] <file>:<line> NCCL WARN <msg>'
    node, lr = job.by_rank(rank)
    return f"{node.short}:{job.pid(rank)}:{job.pid(rank) + 121 + lr} [{lr}] {where} NCCL WARN {msg}"


def nccl_init_lines(job: Job, rank: int) -> list[str]:
    """What NCCL_DEBUG=INFO prints while a communicator comes up."""
    node, lr = job.by_rank(rank)
    out = []
    # src/bootstrap.cc: bootstrapNetInit: INFO(NCCL_INIT, "Bootstrap : Using%s", line)
    out.append(nccl_info(job, rank, f"Bootstrap : Using eth0:{node.ip}<0>"))
    if rank == 0:
        # src/init.cc: showVersion: INFO(NCCL_ALL, "%s", VERSION_STRING)
        out.append(nccl_info(job, rank, f"NCCL version {job.nccl_version}+cuda12.4"))
    # src/transport/net_ib.cc: ncclIbInit: "NET/IB : Using%s %s; OOB %s:%s"
    out.append(nccl_info(job, rank, f"NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:{node.ip}<0>"))
    # src/init.cc: initTransportsRank: "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
    comm = f"0x{0x55a000000000 + rank * 4096 + job.slurm_id:x}"
    out.append(nccl_info(job, rank, f"comm {comm} rank {rank} nRanks {job.world} nNodes {len(job.nodes)} "
                                    f"localRanks {job.nproc} localRank {lr} MNNVL 0"))
    bus = node.pci[lr].split(":")[1] + "000" if node.pci else f"{lr + 1}f000"
    # src/init.cc: ncclCommInitRankFunc: "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId
    # 0x%llx - Init COMPLETE"
    out.append(nccl_info(job, rank, f"ncclCommInitRank comm {comm} rank {rank} nranks {job.world} cudaDev {lr} "
                                    f"nvmlDev {lr} busId {bus} commId 0x{job.slurm_id * 7919:x} - Init COMPLETE"))
    return out


def uptime(node: Node, t: float) -> float:
    return t + node.skew - node.boot


def dmesg(node: Node, t: float, msg: str, human: bool) -> str:
    """A kernel ring-buffer line as `dmesg` (seconds since boot) or `dmesg -T` (wall clock) shows it."""
    if human:
        d = datetime.fromtimestamp(t + node.skew, tz=UTC)
        return f"[{d:%a %b} {d.day:2d} {d:%H:%M:%S %Y}] {msg}"
    return f"[{uptime(node, t):12.6f}] {msg}"


def syslog(node: Node, t: float, msg: str) -> str:
    """The same kernel line as rsyslog writes it to /var/log/syslog (RFC 3164 timestamp, no year)."""
    d = datetime.fromtimestamp(t + node.skew, tz=UTC)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S} {node.short} kernel: [{uptime(node, t):12.6f}] {msg}"


def slurm_time(t: float) -> str:
    # src/common/parse_time.c: slurm_make_time_str, the ISO form slurmstepd puts in its CANCELLED banner
    return f"{datetime.fromtimestamp(t, tz=UTC):%Y-%m-%dT%H:%M:%S}"


def app_log(job: Job, rank: int, t: float, msg: str) -> str:
    # Python logging with a '%(asctime)s - %(levelname)s - %(message)s' format, as training scripts commonly set
    node, _ = job.by_rank(rank)
    d = job.local_time(node, t)
    return f"{d:%Y-%m-%d %H:%M:%S},{d.microsecond // 1000:03d} - INFO - [rank {rank}] {msg}"


def cpp_frames(rng: random.Random, origin: str) -> list[str]:
    """c10::Error's backtrace, as printed after 'Exception raised from <fn> at <file>:<line>'."""
    lib = "/usr/local/lib/python3.10/dist-packages/torch/lib"
    fns = ["c10::Error::Error(c10::SourceLocation, std::string) + 0x96", origin,
           "c10d::ProcessGroupNCCL::watchdogHandler() + 0x1f0", "c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d",
           "<unknown function> + 0xdc253", "<unknown function> + 0x94ac3", "clone + 0x44"]
    libs = ["libc10.so", "libtorch_cuda.so", "libtorch_cuda.so", "libtorch_cuda.so",
            "/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib/x86_64-linux-gnu/libc.so.6"]
    out = []
    for i, (fn, so) in enumerate(zip(fns, libs, strict=True)):
        path = so if so.startswith("/") else f"{lib}/{so}"
        out.append(f"frame #{i}: {fn} (0x7f{rng.randint(0x1000000000, 0xfffffffff0):x} in {path})")
    return out


def py_traceback(frames: list[tuple[str, int, str, str]], exc: str) -> list[str]:
    # CPython Lib/traceback.py: StackSummary.format: '  File "%s", line %d, in %s' then the source line
    out = ["Traceback (most recent call last):"]
    for path, line, fn, src in frames:
        out.append(f'  File "{path}", line {line}, in {fn}')
        out.append(f"    {src}")
    out.extend(exc.split("\n"))
    return out


TRAIN_FRAMES = [("/workspace/train.py", 412, "<module>", "main()"),
                ("/workspace/train.py", 388, "main", "trainer.fit(model, loader)"),
                ("/workspace/trainer.py", 201, "fit", "loss = self.step(batch)")]


def failure_table(name: str, failures: list[tuple[int, int, int, int, str, str, str]], fqdn: str) -> list[str]:
    """torchrun's ChildFailedError summary.

    torch/distributed/elastic/multiprocessing/errors/__init__.py: ChildFailedError.format_msg and
    _format_failure with _MSG_FORMAT_TEMPLATE / _FAILURE_FORMAT_TEMPLATE. The root cause is the failure with the
    smallest timestamp (get_first_failure); `failures` is (rank, local_rank, exitcode, pid, time, error_file,
    message) in the order the agent's dict holds them (by local rank) and their times are ISO strings, whose
    order is the timestamps' order.
    """
    title = f"{name} FAILED"
    root = min(failures, key=lambda f: f[4])
    blocks: list[tuple[int, list[str]]] = []
    for idx, (rank, lr, code, pid, when, efile, msg) in enumerate(failures):
        blk = [f"[{idx}]:", f"  time      : {when}", f"  host      : {fqdn}",
               f"  rank      : {rank} (local_rank: {lr})",
               f"  exitcode  : {code} (pid: {pid})", f"  error_file: {efile}",
               "  traceback : " + msg.replace("\n", "\n  ")]
        blocks.append((rank, "\n".join(blk).split("\n")))
    width = min(max([len(title)] + [len(x) for _, b in blocks for x in b]), 60)
    others = [x for r, b in blocks if r != root[0] for x in b] or ["  <NO_OTHER_FAILURES>"]
    root_lines = next(b for r, b in blocks if r == root[0])
    return ["", "=" * width, title, "-" * width, "Failures:", *others, "-" * width,
            "Root Cause (first observed failure):", *root_lines, "=" * width]


def torchrun_traceback(job: Job) -> list[str]:
    # torch/distributed/run.py: main -> run -> elastic_launch.__call__ -> launch_agent raises ChildFailedError
    pkg = "/usr/local/lib/python3.10/dist-packages/torch/distributed"
    return py_traceback([("/usr/local/bin/torchrun", 8, "<module>", "sys.exit(main())"),
                         (f"{pkg}/elastic/multiprocessing/errors/__init__.py", 355, "wrapper",
                          "return f(*args, **kwargs)"),
                         (f"{pkg}/run.py", 919, "main", "run(args)"),
                         (f"{pkg}/run.py", 910, "run", "elastic_launch("),
                         (f"{pkg}/launcher/api.py", 138, "__call__", "return launch_agent(self._config, "
                                                                      "self._entrypoint, list(args))"),
                         (f"{pkg}/launcher/api.py", 269, "launch_agent", "raise ChildFailedError(")],
                        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ")


def iso_local(job: Job, node: Node, t: float) -> str:
    # ProcessFailure.timestamp_isoformat: datetime.fromtimestamp(int ts).isoformat(sep="_") on the node's clock
    return datetime.fromtimestamp(int(t + node.skew), tz=UTC).replace(tzinfo=None).isoformat(sep="_")
