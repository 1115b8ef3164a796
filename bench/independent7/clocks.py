"""Hosts, their names and aliases, skewed clocks, and every program's timestamp shape.

Each host's clock is off by its own skew (most within ±1.5 s, a third of jobs ±45 s); every stamp a host writes
uses that host's clock. Flux stamps its shell log lines in seconds since the job started (``261.098s:
flux-shell[0]: FATAL: …`` as public flux-framework logs print them, found with find_string; the shell's logger is
flux-core src/shell/log.c, not read here)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass
class Host:
    name: str  # what the launcher and NCCL call it (the label's host)
    alias: str  # a second name some file uses (nid, IP-style name, FQDN)
    ip: str
    skew: float  # seconds this host's clock is ahead of true time
    boot: float  # true epoch seconds at boot (raw dmesg counts from here)
    buses: list[str] = field(default_factory=list)  # PCI bus per local GPU, "4b"


def _ip(rng: random.Random, net: str) -> str:
    return f"{net}.{rng.randint(0, 31)}.{rng.randint(2, 250)}"


def polaris_hosts(rng: random.Random, n: int) -> list[Host]:
    """HPE Cray xnames as host names (x3004c0s7b0n0), nid aliases on the console logs."""
    rack = rng.randint(3000, 3210)
    out: list[Host] = []
    seen: set[str] = set()
    while len(out) < n:
        chassis, slot, node = rng.randint(0, 7), rng.randint(0, 7), rng.randint(0, 1)
        name = f"x{rack}c{chassis}s{slot}b0n{node}"
        if name in seen:
            continue
        seen.add(name)
        nid = f"nid{rng.randint(1, 9999):06d}"
        out.append(Host(name, nid, _ip(rng, "10.140"), 0.0, 0.0))
    return out


def aws_hosts(rng: random.Random, n: int) -> list[Host]:
    """ParallelCluster names (queue-st-type-N) or EC2 ip-a-b-c-d names; the other form is the alias."""
    queue = rng.choice(("gpu", "train", "p5q", "compute"))
    itype = rng.choice(("p548xlarge", "p4de24xlarge", "p5en48xlarge"))
    out = []
    for k in rng.sample(range(1, 64), n):
        ip = _ip(rng, f"10.{rng.randint(0, 7)}")
        dashed = "ip-" + ip.replace(".", "-")
        out.append(Host(f"{queue}-st-{itype}-{k}", dashed, ip, 0.0, 0.0))
    if rng.random() < 0.5:  # plain EC2 naming: the dashed IP is the host name
        out = [Host(h.alias, h.name, h.ip, 0.0, 0.0) for h in out]
    return out


def hpc_hosts(rng: random.Random, n: int) -> list[Host]:
    """Site-style names: LLNL-like machine+number, or rack-row names; FQDN as the alias."""
    scheme = rng.choice(("machine", "rack", "dgx"))
    domain = rng.choice(("llnl.gov", "cluster.local", "hpc.example.edu"))
    out = []
    base = rng.randint(10, 900)
    machine = rng.choice(('tioga', 'corona', 'rzadams', 'matrix'))
    for i in range(n):
        if scheme == "machine":
            name = f"{machine}{base + i}"
        elif scheme == "rack":
            name = f"r{rng.randint(1, 12):02d}u{rng.randint(1, 40):02d}"
        else:
            name = f"dgx-h100-{base + i:03d}"
        out.append(Host(name, f"{name}.{domain}", _ip(rng, "172.16"), 0.0, 0.0))
    if scheme != "machine":
        seen: set[str] = set()
        for h in out:  # rack names can collide: renumber
            while h.name in seen:
                h.name = f"r{rng.randint(1, 12):02d}u{rng.randint(1, 40):02d}"
                h.alias = f"{h.name}.{domain}"
            seen.add(h.name)
    return out


def skew_and_boot(rng: random.Random, hosts: list[Host], t0: float) -> float:
    """Give every host a clock skew and a boot time; returns the job's skew spread (s)."""
    wide = rng.random() < 1 / 3
    for h in hosts:
        h.skew = round(rng.uniform(-45, 45) if wide else rng.uniform(-1.5, 1.5), 3)
        h.boot = t0 - rng.uniform(3 * 3600, 40 * 86400)
        h.buses = _buses(rng)
    return 45.0 if wide else 1.5


def _buses(rng: random.Random) -> list[str]:
    sets = (["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"], ["07", "0f", "47", "4e", "87", "90", "b7", "bd"],
            ["19", "3b", "4c", "5d", "9b", "bb", "cb", "db"])
    return list(rng.choice(sets))


def local(h: Host, t: float) -> float:
    return t + h.skew


def gm(t: float) -> time.struct_time:
    return time.gmtime(t)


def c10(t: float) -> str:
    """glog prefix body of torch ≥ 2.4 (c10/util/Logging.cpp): E1207 06:12:01.123456789."""
    g = gm(t)
    ns = int((t % 1) * 1e9)
    return f"{g.tm_mon:02d}{g.tm_mday:02d} {g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d}.{ns:09d}"


def iso(t: float, sep: str = " ", frac: int = 3) -> str:
    g = gm(t)
    base = f"{g.tm_year}-{g.tm_mon:02d}-{g.tm_mday:02d}{sep}{g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d}"
    if frac == 0:
        return base
    return base + f"{t % 1:.{frac}f}"[1:]


def py_logging(t: float) -> str:
    """Python logging's default asctime: 2026-12-07 06:12:01,123."""
    return iso(t, frac=0) + f",{int((t % 1) * 1000):03d}"


def syslog(t: float) -> str:
    g = gm(t)
    return f"{MONTHS[g.tm_mon - 1]} {g.tm_mday:2d} {g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d}"


def short_iso(t: float) -> str:
    """journalctl -o short-iso: 2026-12-07T06:12:01+0000."""
    return iso(t, sep="T", frac=0) + "+0000"


def rfc3339_us(t: float) -> str:
    return iso(t, sep="T", frac=6) + "+00:00"


def raw_dmesg(h: Host, t: float) -> str:
    return f"[{t - h.boot:12.6f}]"


def slurm_time(t: float) -> str:
    return iso(t, sep="T", frac=0)


def fm_stamp(t: float) -> str:
    """nv-fabricmanager log stamp: [Dec 07 2026 06:12:01] (as in public fabricmanager.log excerpts)."""
    g = gm(t)
    return f"[{MONTHS[g.tm_mon - 1]} {g.tm_mday:02d} {g.tm_year} {g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d}]"
