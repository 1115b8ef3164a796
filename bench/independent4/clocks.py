"""Hosts, their clocks, and the timestamp shapes each program prints.

Every timestamp a host writes is that host's wall clock: true time plus the host's skew. The true order of events
is known only to the generator (it labels from it); the files carry skewed stamps, and some carry none.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

UTC = dt.UTC


@dataclass
class Host:
    name: str  # short host name as the scheduler / hostfile / pod spec gives it
    ip: str
    skew: float  # seconds this host's clock is ahead of true time (negative: behind)
    pci_buses: list[str]  # one PCI bus id per local GPU, as NVRM prints it (0000:bb:00)
    ib_devs: list[str]  # mlx5_N HCAs, one per local GPU rail


def host_names(rng: random.Random, n: int) -> list[str]:
    """Cluster naming schemes seen on public clusters; one scheme per job."""
    scheme = rng.choice(("gpu", "rack", "aws", "gcp", "bare"))
    base = rng.randint(1, 400)
    if scheme == "gpu":
        return [f"gpu{base + i:03d}" for i in range(n)]
    if scheme == "rack":
        row = rng.randint(1, 9)
        return [f"r{row}n{base % 60 + i:02d}" for i in range(n)]
    if scheme == "aws":
        return [f"ip-10-{rng.randint(0, 9)}-{rng.randint(0, 250)}-{rng.randint(2, 250)}" for _ in range(n)]
    if scheme == "gcp":
        return [f"a3-highgpu-{base + i}" for i in range(n)]
    return [f"trn-{rng.choice('abcdef')}{base + i:04d}" for i in range(n)]


def make_hosts(rng: random.Random, n: int, gpus: int, wide_skew: bool) -> list[Host]:
    names = host_names(rng, n)
    if len(set(names)) < n:  # random AWS names may collide; make them unique deterministically
        names = [f"{x}-{i}" for i, x in enumerate(names)]
    subnet = f"10.{rng.randint(1, 250)}.{rng.randint(0, 250)}"
    buses = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
    hosts = []
    for i, name in enumerate(names):
        ip = name[3:].replace("-", ".") if name.startswith("ip-") else f"{subnet}.{10 + i * 3 + rng.randint(0, 2)}"
        spread = 45.0 if wide_skew else 1.5
        local = buses[:gpus] if gpus <= len(buses) else [f"{0x10 + k:02x}" for k in range(gpus)]
        hosts.append(Host(name, ip, rng.uniform(-spread, spread), [f"0000:{b}:00" for b in local],
                          [f"mlx5_{k}" for k in range(gpus)]))
    return hosts


def wall(epoch: dt.datetime, host: Host | None, t: float) -> dt.datetime:
    return epoch + dt.timedelta(seconds=t + (host.skew if host else 0.0))


def c10(w: dt.datetime, level: str) -> str:
    """c10/util/Logging.cpp MessageLogger prefix (torch >= 2.4): `E1207 06:12:01.123456789`."""
    return f"{level}{w:%m%d %H:%M:%S}.{w.microsecond:06d}{(w.microsecond * 7) % 1000:03d}"


def absl(w: dt.datetime, level: str, tid: int, where: str) -> str:
    """absl / glog prefix as JAX and XLA print it: `E1207 06:12:01.075402  157988 file.cc:332]`."""
    return f"{level}{w:%m%d %H:%M:%S}.{w.microsecond:06d} {tid:7d} {where}]"


def pylog(w: dt.datetime) -> str:
    """Python logging's default asctime: `2026-12-07 06:12:01,123`."""
    return f"{w:%Y-%m-%d %H:%M:%S},{w.microsecond // 1000:03d}"


def horovod(w: dt.datetime, level: str, where: str) -> str:
    """horovod/common/logging.cc LogMessage::GenerateLogMessage: `[2026-12-07 06:12:01.345988: W file:105]`."""
    return f"[{w:%Y-%m-%d %H:%M:%S}.{w.microsecond:06d}: {level} {where}]"


def dmesg_t(w: dt.datetime) -> str:
    """util-linux dmesg -T (ctime-style): `[Mon Dec  7 06:12:01 2026]`."""
    return f"[{w:%a %b} {w.day:2d} {w:%H:%M:%S %Y}]"


def journal_iso(w: dt.datetime) -> str:
    """journalctl -o short-iso: `2026-12-07T06:12:01+00:00`."""
    return f"{w:%Y-%m-%dT%H:%M:%S}+00:00"


def rfc3339nano(w: dt.datetime) -> str:
    """kubectl logs --timestamps: RFC3339Nano in UTC."""
    return f"{w:%Y-%m-%dT%H:%M:%S}.{w.microsecond:06d}{w.microsecond % 997:03d}Z"


def slurm(w: dt.datetime) -> str:
    return f"{w:%Y-%m-%dT%H:%M:%S}"
