"""Shared rendering: rank streams, kernel logs, the torchelastic agent, Slurm's srun/slurmstepd lines."""

from __future__ import annotations

import datetime as _dt
import json

from . import lines, topo
from .story import Story

# ---------------------------------------------------------------- rank streams


def rank_events(st: Story, r: int, streams: tuple[str, ...] = ("out", "err", "nlog")) -> list[tuple[float, str]]:
    """(true time, one line) for rank r, cut where its host died (the last line cut mid-way)."""
    h = st.host_of[r]
    dead = st.dead_hosts.get(h)
    d = st.deaths.get(r)
    gone = d.t + 1.5 if d is not None and d.code is not None else float("inf")
    evs = sorted(((t, text) for t, s, text in st.out[r] if s in streams and t <= gone), key=lambda x: x[0])
    out = []
    for t, text in evs:
        if dead is not None and t > dead:
            break
        for ln in text.split("\n"):
            out.append((t, ln))
    if dead is not None and out and st.rng.random() < 0.7:
        t, ln = out[-1]
        out[-1] = (t, ln[: max(1, int(len(ln) * st.rng.uniform(0.2, 0.8)))] + "\x00")  # torn write
    return out


def join(lines_: list[str]) -> str:
    text = "\n".join(lines_)
    if text.endswith("\x00"):
        return text[:-1]  # a torn last line: no newline after it
    return text.replace("\x00\n", "\n") + "\n" if text else ""


# ---------------------------------------------------------------- kernel logs

KNOISE = [
    "IPv6: ADDRCONF(NETDEV_CHANGE): {nic}: link becomes ready",
    "nvidia-nvswitch: Probing device 0000:05:00.0, Vendor Id = 0x10de, Device Id = 0x22a3, Class = 0x68000",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024",
    "nvidia-peermem nv_mem_client_init: ib_register_peer_memory_client succeeded",
    "EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
    'audit: type=1400 audit({ts}:212): apparmor="STATUS" operation="profile_load" profile="unconfined" '
    'name="nvidia_modprobe"',
    "mlx5_core 0000:0c:00.0: mlx5_pcie_event:301:(pid 0): PCIe slot advertised sufficient power (27W).",
    "Lustre: Mounted lustre-client",
    "nfs: Registering the id_resolver key type",
]


def kernel_events(stories: list[Story], h: int) -> list[tuple[float, str]]:
    st0 = stories[0]
    rng = st0.rng
    evs = []
    for _k in range(rng.randint(2, 5)):
        t = st0.hosts[h].boot + rng.uniform(3, 40)
        evs.append((t, rng.choice(KNOISE).format(nic="ibp12s0", ts=int(t))))
    evs.append(
        (
            st0.t0 - rng.uniform(60, 3000),
            "perf: interrupt took too long (2504 > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
        )
    )
    for st in stories:
        evs += st.kern[h]
    return sorted(evs)


def kernel_text(stories: list[Story], h: int, style: str) -> str:
    host = stories[0].hosts[h]
    dead = stories[-1].dead_hosts.get(h)
    out = []
    for t, text in kernel_events(stories, h):
        if dead is not None and t > dead:
            break
        up = t - host.boot
        raw = f"[{int(up):5d}.{int((up % 1) * 1e6):06d}]"
        wall = host.clock(t)
        if style == "dmesg":
            out.append(f"{raw} {text}")
        elif style == "dmesg_T":
            d = topo.utc(wall)
            out.append(f"[{d:%a %b} {d.day:2d} {d:%H:%M:%S %Y}] {text}")
        elif style == "syslog":
            out.append(f"{topo.syslog_ts(wall)} {host.short} kernel: {raw} {text}")
        else:  # journalctl -k
            out.append(f"{topo.journal_ts(wall)} {host.k8s_node or host.short} kernel: {text}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- torchelastic agent (torch/distributed/elastic)


def agent_lines(
    st: Story,
    h: int,
    restarts_left: int | None,
    record: bool,
    run_id: str,
    final: bool,
    launcher: str = "torchrun",
    ev_out: dict | None = None,
) -> tuple[list[tuple[float, str]], list[dict]]:
    """Agent console lines for host h in this attempt, and the failure records its table would show."""
    sp = st.spec
    new = sp.new_torch
    host = st.hosts[h]
    ev_out = {} if ev_out is None else ev_out
    apid = host.agent_pid
    out: list[tuple[float, str]] = []
    info = new or sp.elastic_info  # torch < 2.2 logs elastic INFO lines only with LOGLEVEL=INFO

    def E(t, sev, mod, ln, msg):
        if sev == "I" and not info:
            return
        out.append((t, lines.elastic(new, host.clock(t), sev, apid, mod, ln, msg)))

    t = st.t0
    if st.attempt == 0:
        out.append(
            (
                t - 3,
                lines.elastic(new, host.clock(t - 3), "W", apid, "run.py", 793, "")
                if new
                else "WARNING:torch.distributed.run:",
            )
        )
        out.append(
            (
                t - 3,
                "*****************************************\nSetting OMP_NUM_THREADS environment variable "
                "for each process to be 1 in default, to avoid your system being overloaded, please "
                "further tune the variable for optimal performance in your application as needed. \n"
                "*****************************************",
            )
        )
    E(
        t - 2,
        "I",
        "rendezvous/dynamic_rendezvous.py",
        1132,
        f"The node '{host.pod or host.short}_{apid}_0' has joined round {st.attempt} of the rendezvous '{run_id}' "
        "as rank "
        f"{host.node_rank} in a world of size {sp.nodes}.",
    )
    ranks = st.ranks_on(h)
    failures: list[dict] = []
    if h in st.dead_hosts:
        return out, failures
    if st.external is not None and st.spec.launcher == "agent":
        te = st.external[0]
        E(te, "W", "agent/server/api.py", 719, "Received Signals.SIGTERM death signal, shutting down workers")
        ev_out["evidence"] = "Received Signals.SIGTERM death signal, shutting down workers"
        for r in ranks:
            E(te + 0.001, "W", "multiprocessing/api.py", 897, f"Sending process {st.pid(r)} closing signal SIGTERM")
        tb = lines.traceback(
            [
                (f"/usr/local/bin/{launcher}", 8, "<module>", "sys.exit(main())"),
                (
                    "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/agent/server/api.py",
                    864,
                    "_invoke_run",
                    "time.sleep(monitor_interval)",
                ),
                (
                    "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/api.py",
                    84,
                    "_terminate_process_handler",
                    'raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
                ),
            ],
            f"torch.distributed.elastic.multiprocessing.api.SignalException: Process {apid} got signal: 15",
        )
        out.append((te + 0.5, tb))
        return out, failures
    det = st.agent_fail.get(h)
    if det is None:
        return out, failures
    dead_by = [r for r in ranks if st.deaths[r].code not in (None, 0) and st.deaths[r].t <= det + 1e-9]
    if not dead_by:
        return out, failures
    first = min(dead_by, key=lambda r: st.deaths[r].t)
    d = st.deaths[first]
    E(
        det,
        "E",
        "multiprocessing/api.py",
        869,
        f"failed (exitcode: {d.code}) local_rank: {st.local(first)} (pid: {st.pid(first)}) of binary: /usr/bin/python3",
    )
    for r in ranks:
        if r not in dead_by:
            E(det + 0.002, "W", "multiprocessing/api.py", 897, f"Sending process {st.pid(r)} closing signal SIGTERM")
    for r in sorted(dead_by):
        dd = st.deaths[r]
        t_fail = st.pyerr[r][0] if (dd.code == 1 and r in st.pyerr and record) else det
        rec = {
            "rank": r,
            "local": st.local(r),
            "code": dd.code,
            "pid": st.pid(r),
            "host": host.fqdn,
            "t": t_fail,
            "t_wall": host.clock(t_fail),
            "error_file": None,
            "traceback": None,
        }
        if dd.code == 1 and r in st.pyerr and record:
            rec["error_file"] = (
                f"/tmp/torchelastic_{run_id[:6]}/{run_id}_xyz/attempt_{st.attempt}/{st.local(r)}/error.json"
            )
            rec["traceback"] = st.pyerr[r][1]
        failures.append(rec)
    if restarts_left:
        E(
            det + 1.5,
            "I",
            "agent/server/api.py",
            879,
            f"[default] Worker group FAILED. {restarts_left}/{sp.max_restarts} attempts left; "
            "will restart worker group",
        )
        E(det + 1.6, "I", "agent/server/api.py", 713, "[default] Stopping worker group")
    return out, failures


def table_for(failures: list[dict], script: str) -> str:
    root = min(failures, key=lambda f: f["t"])
    others = sorted((f for f in failures if f is not root), key=lambda f: f["rank"])
    return lines.child_failed_table(script, others, root)


def error_json(st: Story, r: int) -> str:
    """torch/distributed/elastic/multiprocessing/errors/error_handler.py ErrorHandler.record_exception."""
    t, tb = st.pyerr[r]
    msg = tb.rstrip().split("\n")[-1]
    return json.dumps(
        {
            "message": {
                "message": msg,
                "extraInfo": {"py_callstack": tb + "\n", "timestamp": str(int(st.host(r).clock(t)))},
            }
        }
    )


# ---------------------------------------------------------------- Slurm srun / slurmstepd


def srun_lines(st: Story, job_id: str, label_evidence: dict) -> list[tuple[float, str]]:
    """What srun / slurmstepd print into the step's output when tasks end (src/srun/launch.c, step_launch.c,
    slurmstepd/req.c). Times are true times; banners carry the printing host's clock."""
    rng = st.rng
    out: list[tuple[float, str]] = []
    hosts = st.hosts
    by_host: dict[int, list[int]] = {}
    for r in range(st.world):
        by_host.setdefault(st.host_of[r], []).append(r)
    step = f"STEP {job_id}.0"
    nf = None
    if st.dead_hosts:
        h, td = next(iter(st.dead_hosts.items()))
        nf = td + rng.uniform(90, 400)
        out.append((nf, f"srun: error: Node failure on {hosts[h].short}"))
        label_evidence["evidence"] = f"srun: error: Node failure on {hosts[h].short}"
        for hh in by_host:
            if hh != h:
                out.append(
                    (nf + 0.2, lines.stepd_cancel(f"JOB {job_id}", hosts[hh].short, hosts[hh].clock(nf + 0.2), "NODE"))
                )
                break
    if st.external is not None:
        te = st.external[0]
        b = lines.stepd_cancel(f"JOB {job_id}", hosts[0].short, hosts[0].clock(te), "PREEMPT")
        out.append((te, b))
        label_evidence["evidence"] = "DUE TO PREEMPTION"
        for hh in by_host:
            out.append((te + 0.01, lines.stepd_cancel(step, hosts[hh].short, hosts[hh].clock(te), "PREEMPT")))
    for t, what, data in st.sched:
        if what == "step_abort":
            r = data
            d = st.deaths[r]
            out.append((t - 0.3, lines.srun_exit(st.host(r).short, [r], d.code or 1)))
            out.append((t, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."))
            for hh in by_host:
                if hh not in st.dead_hosts:
                    out.append((t + 0.05, lines.stepd_cancel(step, hosts[hh].short, hosts[hh].clock(t + 0.05), None)))
        elif what == "time_limit":
            out.append((t, lines.stepd_cancel(f"JOB {job_id}", hosts[0].short, hosts[0].clock(t), "TIME")))
            out.append((t + 0.01, lines.stepd_cancel(step, hosts[0].short, hosts[0].clock(t), "TIME")))
    aborted = {data for _, what, data in st.sched if what == "step_abort"}
    end = max(d.t for d in st.deaths.values())
    for hh, rs in sorted(by_host.items()):
        groups: dict[int, list[int]] = {}
        for r in rs:
            if r in aborted:
                continue
            c = st.deaths[r].code
            if c is None:
                c = -9
            if c == 0:
                continue
            groups.setdefault(c, []).append(r)
        for c, g in sorted(groups.items()):
            out.append(
                (
                    max(st.deaths[r].t for r in g) + 0.5 if hh not in st.dead_hosts else (nf or end) + 0.5,
                    lines.srun_exit(hosts[hh].short, g, c),
                )
            )
    return out


def stamp_sort(evs: list[tuple[float, str]]) -> list[tuple[float, str]]:
    return sorted(evs, key=lambda x: x[0])


def ctime(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, tz=_dt.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
