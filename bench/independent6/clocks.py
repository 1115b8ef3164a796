"""Host names, addresses, skewed clocks and every program's timestamp shape.

A host's clock is true time plus its skew; every stamp a host writes (c10, glog-style torchrun lines, `dmesg -T`,
journald, Ray's cli_logger) uses that host's clock, and `dmesg -T` / journald print the host's local zone while the
containers print UTC."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

ZONES = ((0, "UTC"), (-8, "PST"), (-5, "EST"), (1, "CET"), (9, "KST"), (8, "CST"))


@dataclass
class Host:
    name: str  # what `hostname` prints: NCCL's `host:pid:tid`, torchrun's table, the label
    ip: str
    skew: float  # seconds this host's clock runs ahead of true time
    tz_hours: int
    alias: str = ""  # another name the same host goes by (a pod's node, a SkyPilot node rank)
    boot: float = 0.0
    extra: dict[str, str] = field(default_factory=dict)


def hosts(rng: random.Random, n: int, scheme: str, big_skew: bool) -> list[Host]:
    tz = rng.choice(ZONES)[0] if rng.random() < 0.5 else 0
    base = (rng.choice((10, 172)), rng.randint(0, 31), rng.randint(0, 250))
    out = []
    for i in range(n):
        ip = f"{base[0]}.{base[1]}.{base[2] + i // 200}.{rng.randint(2, 250)}"
        name = _name(rng, scheme, i, ip)
        skew = rng.uniform(-45, 45) if big_skew else rng.uniform(-1.5, 1.5)
        out.append(Host(name, ip, round(skew, 3), tz, boot=rng.uniform(2e5, 4e6)))
    return out


def _name(rng: random.Random, scheme: str, i: int, ip: str) -> str:
    if scheme == "aws":  # EC2's default hostname spells the private address
        return "ip-" + ip.replace(".", "-")
    if scheme == "sky_gcp":  # SkyPilot's GCP instance names: sky-<hash>-<user>-<hash>-{head,worker}
        tag = f"{rng.randint(0, 0xffff):04x}"
        return f"sky-{tag}-alice-{rng.randint(0, 0xffffffff):08x}-{'head' if i == 0 else 'worker'}"
    if scheme == "dgx":
        return f"dgx-h100-{rng.randint(10, 250):03d}"
    if scheme == "oci":
        return f"gpu-bm-{rng.choice('abcdef')}{rng.randint(1, 9)}-{rng.randint(100, 999)}"
    return f"node{rng.randint(100, 999)}"


def c10(t: float, sev: str, src: str, new: bool) -> str:
    """c10/util/Logging.cpp MessageLogger: torch >= 2.4 `[E1207 06:12:01.123456789 File.cpp:N] `; torch 2.1
    (the glog fallback in c10) `[E File.cpp:N] `. The `[rankN]:` in front is added by the caller."""
    if not new:
        return f"[{sev} {src}] "
    g = time.gmtime(t)
    ns = int((t % 1) * 1e9)
    return f"[{sev}{g.tm_mon:02d}{g.tm_mday:02d} {g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d}.{ns:09d} {src}] "


def glog(t: float, sev: str, pid: int, src: str) -> str:
    """torch >= 2.4 elastic lines through torch/_logging's glog-style formatter:
    `W1207 06:12:01.123000 2718 torch/distributed/run.py:793] ` (microseconds, pid, path:line)."""
    g = time.gmtime(t)
    us = int((t % 1) * 1e6)
    return f"{sev}{g.tm_mon:02d}{g.tm_mday:02d} {g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d}.{us:06d} {pid} {src}] "


def asctime(t: float, tz_hours: int = 0) -> str:
    """Python logging's default asctime `2026-12-07 06:12:01,123` (time.localtime in the process's zone)."""
    g = time.gmtime(t + tz_hours * 3600)
    return time.strftime("%Y-%m-%d %H:%M:%S", g) + f",{int((t % 1) * 1000):03d}"


def dmesg_t(t: float, tz_hours: int) -> str:
    """util-linux dmesg -T: `[Mon Dec  7 06:12:01 2026] ` in the host's local zone (ctime layout)."""
    g = time.gmtime(t + tz_hours * 3600)
    return "[" + time.strftime("%a %b ", g) + f"{g.tm_mday:2d} " + time.strftime("%H:%M:%S %Y", g) + "] "


def journal(t: float, tz_hours: int, host: str) -> str:
    """journalctl -k (short): `Dec 07 06:12:01 host kernel: `."""
    return time.strftime("%b %d %H:%M:%S", time.gmtime(t + tz_hours * 3600)) + f" {host} kernel: "


def torchrun_time(t: float) -> str:
    """The ChildFailedError table's `time      : 2026-12-07_06:12:01` (errors/__init__.py, strftime)."""
    return time.strftime("%Y-%m-%d_%H:%M:%S", time.gmtime(t))


def age(seconds: float) -> str:
    """kubectl's short age column: 41s, 7m12s, 3h4m."""
    s = int(max(seconds, 1))
    if s < 120:
        return f"{s}s"
    if s < 3600 * 3:
        return f"{s // 60}m{s % 60}s" if s < 600 else f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60}m"
