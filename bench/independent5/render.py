"""Styles to text: each program's prefix and timestamp, stamped with the printing host's skewed clock in the
zone that program prints in (a container's zone for the ranks and agents, the host's own for kernel tools)."""

from __future__ import annotations

from . import clocks as C
from .story import Ev, Job


def rank_line(job: Job, e: Ev) -> str:
    """A training process's line as it leaves the process (before any launcher prefix)."""
    h = job.hosts[e.host]
    tz = job.container_tz
    kind, _, rest = e.style.partition("|")
    if kind in ("err", "out"):
        return e.text
    if kind == "c10":
        sev, where = rest.split("|", 1)
        if job.new_torch:  # c10/util/Logging.cpp since 2.3: `[rankN]:` then glog's `[E1207 hh:mm:ss.ns file:line]`
            pre = f"[rank{e.rank}]:" if e.rank is not None else ""
            return f"{pre}[{C.glog(e.t, h, sev, tz)} {where}] {e.text}"
        return f"[{sev} {where.split(':')[0]}:{where.split(':')[1]}] {e.text}"
    if kind == "nccl":
        # nccl src/debug.cc ncclDebugLog: `%s:%d:%d [%d] NCCL INFO ` / `... [%d] %s:%d NCCL WARN `
        assert e.rank is not None
        name = job.extra.get("nccl_hostname", {}).get(e.host, h.name)
        pre = f"{name}:{job.pids[e.rank]}:{job.pids[e.rank] + 41} [{job.local[e.rank]}]"
        parts = rest.split("|")
        if parts[0] == "INFO":
            return f"{pre} NCCL INFO {e.text}"
        return f"{pre} {parts[1]} NCCL WARN {e.text}"
    if kind == "app":
        return app_line(e, h, tz)
    if kind == "agent":
        return agent_line(job, e)
    return e.text


def app_line(e: Ev, h: C.Host, tz: int) -> str:
    fmt, level, where = e.style.split("|")[1:4]
    if fmt == "ds":
        return f"[{C.deepspeed(e.t, h, tz)}] [{level}] [{where}] {e.text}"
    if fmt == "vllm":
        return f"{level} {C.vllm(e.t, h, tz)} [{where}] {e.text}"
    if fmt == "hf":
        return f"{C.hf(e.t, h, tz)} - {level} - {where} - {e.text}"
    if fmt == "megatron":
        return f"[{C.megatron(e.t, h, tz)}]{e.text}"
    return e.text


def agent_line(job: Job, e: Ev) -> str:
    """torchrun's own log lines. torch >= 2.4 formats torch.distributed.elastic loggers glog-style with the
    pid and the path under site-packages (torch/distributed/elastic/utils/logging.py + torch._logging);
    torch 2.1 used logging's default `LEVEL:logger.name:message`."""
    if not e.style.startswith("agent|"):
        return rank_line(job, e) if e.rank is not None else e.text
    sev, where = e.style.split("|")[1:3]
    h = job.hosts[e.host]
    if job.new_torch:
        return (f"[{C.glog(e.t, h, sev, job.container_tz)[:-3]} {job.agent_pids[e.host]} "
                f"site-packages/torch/distributed/{where}] {e.text}")
    level = {"W": "WARNING", "E": "ERROR", "I": "INFO"}[sev]
    mod = "torch.distributed." + where.split(":")[0].replace("/", ".").removesuffix(".py")
    return f"{level}:{mod}:{e.text}"


def kernel_file(job: Job, h: int, events: list[Ev], framing: str) -> str:
    """A host's kernel messages as `dmesg -T`, plain `dmesg`, or `journalctl -k -o short-iso`."""
    host = job.hosts[h]
    out = []
    boot_t = job.t0 - 3600 * 5
    noise = [Ev(boot_t + i * 3.7, h, None, "kernel", "err", m) for i, m in enumerate(_boot_noise())]
    for e in sorted(noise + events, key=lambda x: x.t):
        if framing == "dmesg_t":
            out.append(f"{C.dmesg_t(e.t, host)} {e.text}")
        elif framing == "dmesg_raw":
            out.append(f"{C.dmesg_raw(e.t, host)} {e.text}")
        else:
            out.append(f"{C.journal_iso(e.t, host)} {host.name} kernel: {e.text}")
    return "\n".join(out) + "\n"


def _boot_noise() -> list[str]:
    from .kernel import BOOT_NOISE
    return BOOT_NOISE


def interleave(job: Job, events: list[Ev], jitter: float) -> list[Ev]:
    """Lines forwarded by a launcher arrive in true order give or take `jitter` seconds between processes (each
    process's own lines keep their order)."""
    keyed = []
    offs: dict[tuple[int, int | None, str], float] = {}
    for e in events:
        k = (e.host, e.rank, e.src)
        if k not in offs:
            offs[k] = job.rng.uniform(0, jitter)
        keyed.append((e.t + offs[k], e))
    return [e for _, e in sorted(keyed, key=lambda x: x[0])]
