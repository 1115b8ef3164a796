"""Hosts, their names and addresses, their skewed clocks and time zones, and every timestamp shape the rendered
programs print.

A host's clock is true time plus its skew; a program prints that clock in the zone it runs in. Containers and
Kubernetes pods usually run in UTC (no TZ in the image) while the host's own tools (dmesg -T, journalctl) print
the host's local zone, so one job's files can carry the same instant in two or three zones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

# Zones a fleet's hosts are commonly set to (hours east of UTC); 0 is UTC itself.
ZONES = (0, 0, -8, -7, -5, 1, 2, 8, 9)


@dataclass
class Host:
    name: str  # the scheduler's name of the node (hostfile / Slurm / pod name)
    ip: str
    skew: float  # seconds this host's clock runs ahead of true time
    tz_hours: int  # the host's local zone
    boot: float  # true time the kernel booted (dmesg counts from here)
    pci_buses: list[str] = field(default_factory=list)  # one per GPU, index = local GPU


def _names(rng: random.Random, n: int) -> list[str]:
    scheme = rng.choice(("dgx", "hgx", "aws", "gcp", "lambda", "coreweave"))
    base = rng.randint(10, 180)
    if scheme == "dgx":
        return [f"dgx-h100-{base + i:03d}" for i in range(n)]
    if scheme == "hgx":
        rack = rng.randint(1, 9)
        return [f"hgx{rack}r{(base + i) % 40 + 1:02d}" for i in range(n)]
    if scheme == "aws":
        return [f"ip-172-31-{rng.randint(0, 63)}-{rng.randint(2, 254)}" for _ in range(n)]
    if scheme == "gcp":
        pool = rng.choice(("a3mega", "a3high", "a4"))
        return [f"{pool}-node-{base + i}" for i in range(n)]
    if scheme == "lambda":
        return [f"gpu-{rng.randint(1000, 9999):04x}-node{i + 1}" for i in range(n)]
    return [f"g{rng.randint(100, 999)}a{base + i:03d}" for i in range(n)]


def make_hosts(rng: random.Random, n: int, big_skew: bool, tz: int) -> list[Host]:
    names = _names(rng, n)
    if len(set(names)) < n:  # the AWS scheme can repeat; fall back to numbered names
        names = [f"{names[0]}-{i}" for i in range(n)]
    net = rng.choice(("10.64", "10.128", "172.20", "192.168"))
    hosts = []
    for i, name in enumerate(names):
        spread = 45.0 if big_skew else 1.5
        skew = round(rng.uniform(-spread, spread), 3)
        buses = rng.sample(["18", "2a", "3a", "5d", "9a", "ab", "ba", "db", "19", "3b", "4c", "5e"], 8)
        hosts.append(Host(name=name, ip=f"{net}.{rng.randint(0, 30)}.{10 + i * 3 + rng.randint(0, 2)}", skew=skew,
                          tz_hours=tz, boot=0.0, pci_buses=buses))
    return hosts


def _at(t: float, host: Host, tz_hours: int | None) -> datetime:
    """The host's clock reading for true time t, in tz_hours (None: the host's own zone)."""
    tz = timezone(timedelta(hours=host.tz_hours if tz_hours is None else tz_hours))
    return datetime.fromtimestamp(t + host.skew, tz)


# --- stamps, each with the program that prints it ---------------------------------------------------------

def glog(t: float, host: Host, sev: str, tz: int | None = 0) -> str:
    """c10's glog-style prefix, torch >= 2.4: `E1207 06:12:01.123456789` (c10/util/Logging.cpp MessageLogger)."""
    d = _at(t, host, tz)
    return f"{sev}{d:%m%d %H:%M:%S}.{d.microsecond:06d}{int(t * 1e9) % 1000:03d}"


def deepspeed(t: float, host: Host, tz: int | None = 0) -> str:
    """DeepSpeed's logger: `[%(asctime)s]` with logging's default datefmt, `2026-12-07 06:12:01,123`
    (deepspeed/utils/logging.py create_logger:
    `[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] `)."""
    d = _at(t, host, tz)
    return f"{d:%Y-%m-%d %H:%M:%S},{d.microsecond // 1000:03d}"


def vllm(t: float, host: Host, tz: int | None = 0) -> str:
    """vLLM's formatter datefmt `%m-%d %H:%M:%S` (vllm/logger.py _FORMAT / _DATE_FORMAT)."""
    return f"{_at(t, host, tz):%m-%d %H:%M:%S}"


def hf(t: float, host: Host, tz: int | None = 0) -> str:
    """The Hugging Face examples' logging.basicConfig datefmt `%m/%d/%Y %H:%M:%S` (accelerate/transformers
    examples, e.g. run_clm_no_trainer.py)."""
    return f"{_at(t, host, tz):%m/%d/%Y %H:%M:%S}"


def megatron(t: float, host: Host, tz: int | None = 0) -> str:
    """Megatron-LM training_log's `[%Y-%m-%d %H:%M:%S]` (megatron/training/training.py, datetime.now())."""
    return f"{_at(t, host, tz):%Y-%m-%d %H:%M:%S}"


def dmesg_t(t: float, host: Host) -> str:
    """`dmesg -T`: ctime-style in the host's zone, `[Mon Dec  7 06:12:01 2026]` (util-linux dmesg.c)."""
    d = _at(t, host, None)
    return f"[{d:%a %b} {d.day:2d} {d:%H:%M:%S %Y}]"


def dmesg_raw(t: float, host: Host) -> str:
    """Plain `dmesg`: seconds since boot, `[12345.678901]` (kernel printk time, not the wall clock)."""
    up = max(0.0, t - host.boot)
    return f"[{up:12.6f}]"


def journal_iso(t: float, host: Host) -> str:
    """`journalctl -k -o short-iso`: `2026-12-07T15:12:01+0900` in the host's zone (systemd logs-show.c)."""
    d = _at(t, host, None)
    return d.strftime("%Y-%m-%dT%H:%M:%S%z")


def rfc3339(t: float, host: Host) -> str:
    """Kubernetes / Volcano event times and `kubectl logs --timestamps`: RFC 3339 in UTC, `...Z`."""
    d = _at(t, host, 0)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond:06d}{int(t * 1e9) % 1000:03d}Z"


def slurm(t: float, host: Host) -> str:
    """slurmstepd's `CANCELLED AT 2026-12-07T06:12:01` (Slurm's slurm_make_time_str, local zone, no offset)."""
    return f"{_at(t, host, None):%Y-%m-%dT%H:%M:%S}"


def smi(t: float, host: Host) -> str:
    """nvidia-smi's banner date, `Mon Dec  7 06:12:01 2026` (host zone)."""
    d = _at(t, host, None)
    return f"{d:%a %b} {d.day:2d} {d:%H:%M:%S %Y}"
