"""Shared rendering: a rank's entries as the lines its process wrote (stamped with its host's clock), launcher
cut-offs, and the torchrun agent's own lines (torch/distributed/elastic: multiprocessing/api.py `_poll` logs the
failure and `close()` SIGTERMs the rest; errors/__init__.py formats ChildFailedError — the table layout checked
against public logs with `find_string`)."""

from __future__ import annotations

from . import clocks, kernel
from .story import Job

SITE = "/usr/local/lib/python3.11/dist-packages"


def cut(job: Job, rank: int, t_kill: float, code: int) -> None:
    """A launcher kills `rank` at t_kill: nothing it would have printed later is written; its exit is the kill's."""
    if rank in job.exits and job.exits[rank][0] <= t_kill:
        return
    job.out[rank] = [e for e in job.out.get(rank, []) if e[0] <= t_kill]
    job.exits[rank] = (t_kill, code)


ALL = ("c10", "py", "out", "nccl")


def rank_lines(job: Job, rank: int, channels: tuple[str, ...] = ALL) -> list[tuple[float, str]]:
    """(true time, text) for every line the rank wrote on the given channels, stamped with its host's clock."""
    skew = job.hosts[job.node_of(rank)].skew
    out: list[tuple[float, str]] = []
    for t, ch, payload in sorted(job.out.get(rank, []), key=lambda e: e[0]):
        if ch not in channels:
            continue
        out += [(t, line) for line in _render(job, rank, t + skew, ch, payload)]
    return out


def _render(job: Job, rank: int, stamp_t: float, ch: str, payload: object) -> list[str]:
    if ch == "c10":
        assert isinstance(payload, tuple)
        sev, src, msg = (str(x) for x in payload)
        first, *rest = msg.split("\n")
        pre = f"[rank{rank}]:" if job.torch_new and not src.startswith("socket.cpp") else ""
        return [pre + clocks.c10(stamp_t, sev, src, job.torch_new) + first, *rest]
    if ch == "py" and job.torch_new and not str(payload).startswith("terminate called"):
        return [f"[rank{rank}]: {payload}"]
    return [str(payload)]


def merge(streams: list[list[tuple[float, str]]]) -> list[str]:
    """Interleave several writers' lines by true time (a stable sort keeps each writer's own order)."""
    allv = [(t, i, j, s) for i, st in enumerate(streams) for j, (t, s) in enumerate(st)]
    return [s for _, _, _, s in sorted(allv)]


def kernel_file(job: Job, node: int, style: str) -> str:
    """dmesg -T (host zone) or journalctl -k, with the host's skewed clock."""
    h = job.hosts[node]
    lines = []
    for t, body in sorted(job.kernel.get(node, [])):
        ts = t + h.skew
        pre = clocks.dmesg_t(ts, h.tz_hours) if style == "dmesg" else clocks.journal(ts, h.tz_hours, h.alias or h.name)
        lines.append(pre + body)
    if not lines:
        lines = [clocks.dmesg_t(job.t0, h.tz_hours) + kernel.boot_noise(job.rng, "550.90.07")[0]]
    return "\n".join(lines) + "\n"


def agent_banner(job: Job, node: int, t: float, pid: int) -> list[tuple[float, str]]:
    """torch/distributed/run.py's OMP_NUM_THREADS warning, glog-style (torch >= 2.4) or logging's default format."""
    text = ["", "*****************************************", "Setting OMP_NUM_THREADS environment variable for each "
            "process to be 1 in default, to avoid your system being overloaded, please further tune the variable for "
            "optimal performance in your application as needed. ", "*****************************************"]
    if job.torch_new:
        ts = t + job.hosts[node].skew
        return [(t, clocks.glog(ts, "W", pid, "torch/distributed/run.py:793") + x) for x in text]
    return [(t, "WARNING:torch.distributed.run:" + x) for x in text]


def agent_log(job: Job, node: int, t: float, pid: int, sev: str, src: str, msg: str) -> tuple[float, str]:
    """A torchrun agent line at true time t, stamped with its host's clock: glog-style on torch >= 2.4, torch 2.1's
    `[%(asctime)s] %(name)s: [%(levelname)s] %(message)s` (torch/distributed/elastic/utils/logging.py) before."""
    ts = t + job.hosts[node].skew
    if job.torch_new:
        return (t, clocks.glog(ts, sev[0], pid, f"torch/distributed/elastic/{src}") + msg)
    name = "torch.distributed.elastic." + src.split(".py")[0].replace("/", ".")
    return (t, f"[{clocks.asctime(ts)}] {name}: [{sev}] {msg}")


def child_failed(job: Job, node: int, t: float, failures: list[tuple[int, int, float]]) -> list[str]:
    """The agent's ChildFailedError: `Root Cause (first observed failure)` is the earliest failure, the rest under
    `Failures:`; exit codes < 0 print `Signal N (SIGX) received by PID P`."""
    host = job.hosts[node].name
    frames = [("/usr/local/bin/torchrun", 8, "<module>", "sys.exit(main())"),
              (f"{SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py", 355, "wrapper",
               "return f(*args, **kwargs)"),
              (f"{SITE}/torch/distributed/run.py", 919, "main", "run(args)"),
              (f"{SITE}/torch/distributed/run.py", 910, "run", "elastic_launch("),
              (f"{SITE}/torch/distributed/launcher/api.py", 138, "__call__",
               "return launch_agent(self._config, self._entrypoint, list(args))"),
              (f"{SITE}/torch/distributed/launcher/api.py", 269, "launch_agent", "raise ChildFailedError(")]
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'  File "{path}", line {line}, in {func}', f"    {code}"]
    bar = "=" * 60
    out += ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", bar, f"{job.script} FAILED",
            "-" * 60, "Failures:"]
    ordered = sorted(failures, key=lambda f: (f[2], f[0]))
    rest = ordered[1:]
    if not rest:
        out.append("  <NO_OTHER_FAILURES>")
    for i, f in enumerate(rest, 1):
        out += _entry(job, i, f, host, t)
    out += ["-" * 60, "Root Cause (first observed failure):", *_entry(job, 0, ordered[0], host, t), bar]
    return out


_SIG = {-6: "Signal 6 (SIGABRT)", -9: "Signal 9 (SIGKILL)", -15: "Signal 15 (SIGTERM)"}


def _entry(job: Job, i: int, f: tuple[int, int, float], host: str, t: float) -> list[str]:
    rank, code, _ = f
    pid = job.pids[rank]
    tb = (f"{_SIG[code]} received by PID {pid}" if code in _SIG
          else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
    return [f"[{i}]:", f"  time      : {clocks.torchrun_time(t)}", f"  host      : {host}",
            f"  rank      : {rank} (local_rank: {job.local(rank)})", f"  exitcode  : {code} (pid: {pid})",
            "  error_file: <N/A>", f"  traceback : {tb}"]


def progress(job: Job, rank: int, style: str) -> None:
    """A few healthy training lines before the fault (stdout)."""
    step = job.extra.setdefault("step0", job.rng.randint(200, 3000))
    n = 6
    for i in range(n):
        t = job.t0 + 60 + (job.tf - job.t0 - 90) * i / n
        s = step + i * 50
        loss = 2.9 - 0.01 * i + job.rng.uniform(-0.05, 0.05)
        if style == "composer":  # composer/loggers/console_logger.py log_to_console (read)
            job.emit(rank, t, "out", f"[batch={s}/{step * 4}]:")
            job.emit(rank, t + 1e-6, "out", f"\t Train loss/train/total: {loss:.4f}")  # console_logger.py
        else:
            tps = job.rng.randint(9000, 9900)
            job.emit(rank, t, "out", f"step {s} | loss {loss:.4f} | lr 2.9e-04 | tokens/s {tps}")
