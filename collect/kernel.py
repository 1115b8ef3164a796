"""A node's kernel log since its job started, for the node epilog: the OOM killer, Xids, ECC and PCIe errors
are printed there, never in any rank's output, and by the time anyone looks the ring buffer may have wrapped.

Read with `journalctl -k -q --since START -o short-iso --no-pager` (systemd's journal: readable by root, which
slurmd runs the epilog as by default, and the systemd-journal group), else `dmesg --time-format iso` (util-linux;
the ring buffer since boot, filtered here by time). Lines as each prints them (both formats: correlator/speakers.py
and the catalog read them): `2026-12-03T10:14:45+0000 gpu002 kernel: ...` and `2026-12-03T10:14:45,123456+00:00
...`. Bounded in time like every collector call, and in size: the last MAX_BYTES are kept, the end being where a
job's failure is.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from collect.send import Item
from ingest.chunking import StreamKey

MAX_BYTES = 8 * 1024 * 1024
# Clocks and the scheduler's StartTime disagree by seconds; a kernel line from just before the job is context.
MARGIN = timedelta(minutes=2)

Run = Callable[[list[str], float], tuple[str | None, str]]


def since_argument(start: datetime | None) -> list[str]:
    """journalctl's --since for a job that started at `start` (local time, as scontrol prints it)."""
    if start is None:
        return ["-b"]  # this boot: the tail below bounds it
    return ["--since", (start - MARGIN).strftime("%Y-%m-%d %H:%M:%S")]


def _stamp(line: str) -> datetime | None:
    head = line.split(" ", 1)[0].replace(",", ".")
    try:
        stamp = datetime.fromisoformat(head)
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.astimezone()


def since(text: str, start: datetime | None) -> str:
    """The lines of `dmesg --time-format iso` from the job's start on (a line without a time goes with the one
    before it: a continuation)."""
    if start is None:
        return text
    cutoff = (start - MARGIN).astimezone()
    kept: list[str] = []
    keeping = False
    for line in text.splitlines(keepends=True):
        stamp = _stamp(line)
        if stamp is not None:
            keeping = stamp >= cutoff
        if keeping:
            kept.append(line)
    return "".join(kept)


def _tail(text: str) -> bytes:
    data = text.encode("utf-8", "replace")
    if len(data) <= MAX_BYTES:
        return data
    cut = data[-MAX_BYTES:]
    return cut[cut.find(b"\n") + 1:]  # from a line's start


def kernel_item(host: str, start: datetime | None, run: Run, timeout_s: float,
                reasons: list[str]) -> Item | None:
    """The node's kernel log as a `dmesg` source of `host`, or None with why in `reasons`."""
    text, why = run(["journalctl", "-k", "-q", "-o", "short-iso", "--no-pager", *since_argument(start)], timeout_s)
    if text is None:
        ring, ring_why = run(["dmesg", "--time-format", "iso"], timeout_s)
        if ring is None:
            reasons.append(f"kernel log not read ({why}; {ring_why})")
            return None
        text = since(ring, start)
    if not text.strip():
        return None  # a quiet kernel: nothing to ship, nothing wrong
    return Item(StreamKey("dmesg", None, host), "kernel.log", data=_tail(text))
