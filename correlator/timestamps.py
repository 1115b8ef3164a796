"""Timestamps as real training logs print them. Pure: the reference year is an argument."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], start=1)}
BOOT_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_ISO = re.compile(
    r"(?P<y>20\d\d)-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<f>\d{1,9}))?"
    r"(?P<tz>Z|[+-]\d\d:?\d\d)?"
)
# glog: E1129 10:02:03.123456 (PyTorch prints nanoseconds: [E1129 10:02:03.123456789 File.cpp:632])
_GLOG = re.compile(
    r"(?:^|[\[\s:])[IWEF](?P<mo>[01]\d)(?P<d>[0-3]\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\.(?P<f>\d{1,9})"
)
# dmesg -T / ctime: [Sun Aug 23 17:58:44 2026]
_CTIME = re.compile(
    r"\[?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) "
    r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d) (?P<y>20\d\d)\]?"
)
# syslog: Nov 29 10:02:03 node017 kernel: ...
_SYSLOG = re.compile(r"^(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d) ")
# vLLM and friends: ERROR 04-15 00:31:11 worker_base.py:574]
_MMDD = re.compile(r"^(?:[A-Z]+ +)?(?P<mo>[01]\d)-(?P<d>[0-3]\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\b")
# dmesg: [12345.678901] seconds since boot
_BOOT = re.compile(r"^\[\s*(?P<sec>\d{1,9}\.\d{3,9})\]")
# Every wall-clock format above holds this: a line without it (most NCCL INFO lines) skips their searches.
_CLOCK = re.compile(r"\d\d:\d\d:\d\d")
_CLOCK_HINT = re.compile(r":\d\d:\d\d")  # what _CLOCK needs, found 5-10x faster (a literal first)


class Stamp(NamedTuple):  # a tuple: one is made for most distinct lines
    time: datetime
    clock: str  # "wall" or "boot"


def _frac(digits: str | None) -> int:
    if not digits:
        return 0
    return int(digits[:6].ljust(6, "0"))


def _safe(year: int, month: int, day: int, h: int, mi: int, s: int, us: int) -> datetime | None:
    try:
        return datetime(year, month, day, h, mi, s, us, tzinfo=UTC)
    except ValueError:
        return None


def _tz(text: str | None) -> timedelta:
    if not text or text == "Z":
        return timedelta(0)
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4]))


HEAD = 160  # a stamp is looked for in a line's first 160 characters: each search's endpos (no copy of them)
STAMP_MEMO = 4096
# glog stamps already read: the lines of one failure on one rank share theirs (seven per rank at 4,096 ranks),
# and then share one datetime too, which the pool's workers pickle once.
glog_stamps: dict[tuple[str, int], Stamp | None] = {}


def parse_timestamp(line: str, year: int) -> Stamp | None:
    """The first timestamp in the first 160 characters of ``line``; times without a zone are taken as UTC.

    ``year`` fills formats that print none (glog, syslog, vLLM's MM-DD).
    """
    if m := _BOOT.match(line, 0, HEAD):
        return Stamp(BOOT_EPOCH + timedelta(seconds=float(m["sec"])), "boot")
    if not _CLOCK_HINT.search(line, 0, HEAD) or not _CLOCK.search(line, 0, HEAD):
        return None
    if m := _ISO.search(line, 0, HEAD):
        t = _safe(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), _frac(m["f"]))
        return Stamp(t - _tz(m["tz"]), "wall") if t else None
    if m := _GLOG.search(line, 0, HEAD):  # PyTorch's C++ lines: the commonest stamp among distinct lines
        key = (m.group(0), year)  # the stamp is read from these characters alone
        if key in glog_stamps:
            return glog_stamps[key]
        mo, d, h, mi, sec, frac = m.group("mo", "d", "h", "mi", "s", "f")
        t = _safe(year, int(mo), int(d), int(h), int(mi), int(sec), int(frac[:6].ljust(6, "0")))
        if len(glog_stamps) >= STAMP_MEMO:
            glog_stamps.clear()
        stamp = glog_stamps[key] = Stamp(t, "wall") if t else None
        return stamp
    if m := _CTIME.search(line, 0, HEAD):
        t = _safe(int(m["y"]), MONTHS.get(m["mon"], 0), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), 0)
        return Stamp(t, "wall") if t else None
    if m := _SYSLOG.match(line, 0, HEAD):
        month = MONTHS.get(m["mon"])
        t = _safe(year, month, int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), 0) if month else None
        return Stamp(t, "wall") if t else None
    if m := _MMDD.match(line, 0, HEAD):
        t = _safe(year, int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), 0)
        return Stamp(t, "wall") if t else None
    return None
