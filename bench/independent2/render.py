"""Rendering helpers shared by the layouts: per-line prefixes, kernel logs, the torchelastic failure table."""

from __future__ import annotations

import signal
from collections.abc import Callable
from datetime import UTC, datetime

from .story import Story
from .topo import Topo

Line = tuple[float, str]  # (arrival time, rendered line)


def rank_lines(topo: Topo, st: Story, prefix: Callable[[int], str], keep: Callable[[int], bool] | None = None
               ) -> list[Line]:
    out: list[Line] = []
    for ev in st.events:
        if ev.src != "rank" or ev.rank is None or (keep and not keep(ev.rank)):
            continue
        text = topo.stamp(ev.text, ev.t, ev.host)
        for i, ln in enumerate(text.split("\n")):
            out.append((ev.t + i * 1e-6, prefix(ev.rank) + ln))
    return out


def on_node(topo: Topo, n: int) -> Callable[[int], bool]:
    return lambda r: topo.node(r) == n


def only(rank: int) -> Callable[[int], bool]:
    return lambda r: r == rank


def sched_lines(topo: Topo, st: Story) -> list[Line]:
    out: list[Line] = []
    for ev in st.events:
        if ev.src == "sched":
            for i, ln in enumerate(topo.stamp(ev.text, ev.t, ev.host).split("\n")):
                out.append((ev.t + i * 1e-6, ln))
    return out


def join(lines: list[Line]) -> str:
    return "\n".join(ln for _, ln in sorted(lines, key=lambda x: x[0])) + "\n"


def sig_name(rc: int) -> str:
    return signal.Signals(-rc).name


_BENIGN = [
    "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
    "nvidia-nvlink: Nvlink Core is being initialized, major device number 234",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023",
    "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
    "mlx5_core 0000:0c:00.0: mlx5_pcie_event:301:(pid 4021): PCIe slot advertised sufficient power (75W).",
]


def dmesg_files(topo: Topo, st: Story, style: str, naming: str, everyone: bool) -> dict[str, str]:
    """Kernel ring buffer per host. style: 'raw' (dmesg: '[%5lu.%06lu] ' seconds since boot, kernel
    printk_time), 'human' (dmesg -T, the host's skewed wall clock), 'journal' (journalctl -k short format)."""
    per: dict[int, list[tuple[float, str]]] = {}
    for ev in st.events:
        if ev.src == "kernel" and ev.host is not None:
            per.setdefault(ev.host, []).append((ev.t, ev.text))
    hosts = range(len(topo.hosts)) if everyone else sorted(per)
    files: dict[str, str] = {}
    for h in hosts:
        evs = [(-topo.uptime0[h] + 2.0 + i * 1.7, b) for i, b in enumerate(_BENIGN)] + sorted(per.get(h, []))
        name = {"short": topo.hosts[h], "fqdn": topo.fqdn[h], "ip": topo.ips[h]}[naming]
        out = []
        for t, text in evs:
            up = topo.uptime(t, h)
            wall = datetime.fromtimestamp(topo.t0 + t + topo.skew[h], tz=UTC)
            if style == "raw":
                out.append(f"[{up:12.6f}] {text}")
            elif style == "human":
                out.append(f"[{wall.strftime('%a %b %d %H:%M:%S %Y')}] {text}")
            else:
                out.append(f"{wall.strftime('%b %d %H:%M:%S')} {topo.hosts[h]} kernel: {text}")
        files[f"{'dmesg' if style != 'journal' else 'journal'}/{name}.log"] = "\n".join(out) + "\n"
    return files


def elastic_table(topo: Topo, st: Story, node: int, poll: float, script: str) -> tuple[float, str] | None:
    """pytorch/pytorch torch/distributed/elastic/multiprocessing/errors/__init__.py ChildFailedError.format_msg
    (the '<script> FAILED' table) and ProcessFailure: the agent's monitor loop (agent/server/api.py _invoke_run,
    every `poll` seconds) records the workers of this node that have failed when it first looks; the 'Root Cause
    (first observed failure)' is the one with the smallest timestamp, ties going to the lowest rank."""
    mine = {r: st.exits[r] for r in topo.ranks_on(node) if r in st.exits and st.exits[r][1] != 0}
    if not mine:
        return None
    first_t = min(t for t, _ in mine.values())
    seen = (int(first_t / poll) + 1) * poll
    failed = sorted(r for r, (t, _) in mine.items() if t <= seen)
    stamp = datetime.fromtimestamp(topo.t0 + seen + topo.skew[node], tz=UTC).strftime("%Y-%m-%d_%H:%M:%S")

    def block(i: int, r: int) -> list[str]:
        rc = mine[r][1]
        pid = topo.pids[r]
        tb = (f"Signal {-rc} ({sig_name(rc)}) received by PID {pid}" if rc < 0
              else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
        return [f"[{i}]:", f"  time      : {stamp}", f"  host      : {topo.fqdn[node]}",
                f"  rank      : {r} (local_rank: {topo.local(r)})", f"  exitcode  : {rc} (pid: {pid})",
                "  error_file: <N/A>", f"  traceback : {tb}"]

    root, rest = failed[0], failed[1:]
    out = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60, f"{script} FAILED",
           "-" * 60, "Failures:"]
    if not rest:
        out.append("  <NO_OTHER_FAILURES>")
    for i, r in enumerate(rest, 1):
        out += block(i, r)
    out += ["-" * 60, "Root Cause (first observed failure):", *block(0, root), "=" * 60]
    return seen, "\n".join(out)


def elastic_agent_lines(topo: Topo, st: Story, node: int, poll: float) -> list[Line]:
    """torch/distributed/elastic/multiprocessing/api.py: '[W...] Sending process %s closing signal SIGTERM' for
    the node's other workers and '[E...] failed (exitcode: %s) local_rank: %s (pid: %s) of binary: %s'."""
    mine = {r: st.exits[r] for r in topo.ranks_on(node) if r in st.exits and st.exits[r][1] != 0}
    if not mine:
        return []
    t = (int(min(tt for tt, _ in mine.values()) / poll) + 1) * poll
    first = min(r for r, (tt, _) in mine.items() if tt <= t)  # the poll walks local ranks in order
    tid = 140_000_000_000_000 + topo.pids[0] * 4096

    def log(lvl: str, where: str, msg: str) -> str:
        # torch >= 2.3: glog-style '%(levelname).1s%(asctime)s.%(msecs)06d %(thread)d %(pathname)s:%(lineno)d]';
        # earlier: the default logging format 'LEVEL:logger.name:msg'
        if topo.torch_new:
            return f"{lvl[0]}@GLOG@ {tid} torch/distributed/elastic/multiprocessing/api.py:{where}] {msg}"
        return f"{lvl}:torch.distributed.elastic.multiprocessing.api:{msg}"

    out = []
    for r in topo.ranks_on(node):
        if r not in mine or mine[r][0] > t:
            out.append((t, topo.stamp(log("WARNING", "897", f"Sending process {topo.pids[r]} closing signal SIGTERM"),
                                      t, node)))
    out.append((t + 0.5, topo.stamp(log("ERROR", "869", f"failed (exitcode: {mine[first][1]}) local_rank: "
                                        f"{topo.local(first)} (pid: {topo.pids[first]}) of binary: /usr/bin/python3"),
                                    t + 0.5, node)))
    return out


def first_bad(st: Story, ranks: list[int] | None = None) -> float | None:
    ts = [t for r, (t, rc) in st.exits.items() if rc != 0 and (ranks is None or r in ranks)]
    return min(ts) if ts else None


def cut(st: Story, until: dict[int, float]) -> Story:
    """The story as a launcher that kills workers sees it: a rank whose launcher tore it down at until[rank] prints
    nothing later and exits there with SIGTERM (-15) unless it had already exited."""
    out = Story(**{k: v for k, v in vars(st).items()})
    out.events = [ev for ev in st.events if ev.src != "rank" or ev.rank is None or ev.t <= until.get(ev.rank, 1e18)]
    out.exits = {}
    for r, (t, rc) in st.exits.items():
        u = until.get(r, 1e18)
        out.exits[r] = (t, rc) if t <= u else (u + 0.05, -15)
    out.end = max([t for t, _ in out.exits.values()] + [0.0])
    return out


def cut_all(topo: Topo, st: Story, delay: float) -> Story:
    t = first_bad(st)
    return st if t is None else cut(st, {r: t + delay for r in range(topo.world)})


def cut_nodes(topo: Topo, st: Story, poll: float) -> Story:
    until: dict[int, float] = {}
    for n in range(len(topo.hosts)):
        t = first_bad(st, topo.ranks_on(n))
        if t is not None:
            for r in topo.ranks_on(n):
                until[r] = (int(t / poll) + 1) * poll
    return cut(st, until)
