"""Timing runs: one measurement repeated (repeat), or several measured in turn, round after round (rounds).

This machine's speed drifts by tens of percent over minutes, and not alike for every program: in one session
rg's run went from 1.4 to 2.4 s between two benchmark runs, and an identical scan took 4.4 s, then 1.7 s. Two
medians taken minutes apart then compare two machines. ``rounds`` runs the compared commands one after the other
in every round, so a ratio can be taken within each round (see paired), where both sides saw the same machine.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Run = Callable[[], dict[str, Any]]  # one run; what it returns goes to Timing.extra ("_child_cpu": CPU-s to add)


def log(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


@dataclass
class Timing:
    name: str
    nbytes: int
    runs: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def mb_s(self) -> float:
        return self.nbytes / 1e6 / self.median if self.runs else 0.0

    @property
    def cpu_mb_s(self) -> float:
        """Per CPU-second: steadier than wall clock on a shared machine (for rg -j2, CPU > wall)."""
        cpu = statistics.median(self.cpu) if self.cpu else 0.0
        return self.nbytes / 1e6 / cpu if cpu else 0.0

    def json(self) -> dict[str, Any]:
        return {"bytes": self.nbytes, "runs_s": [round(x, 4) for x in self.runs],
                "cpu_s": [round(x, 4) for x in self.cpu], "median_s": round(self.median, 4),
                "mb_per_s": round(self.mb_s, 2),
                "mb_per_cpu_s": round(self.cpu_mb_s, 2), **self.extra}

    def run_once(self, fn: Run) -> None:
        """Time one run of ``fn``: wall clock, and CPU of this process and of the children it reports."""
        c0, w0 = time.process_time(), time.perf_counter()
        extra = fn()
        w1, c1 = time.perf_counter(), time.process_time()
        first = not self.runs
        self.runs.append(w1 - w0)
        self.cpu.append(c1 - c0 + extra.pop("_child_cpu", 0.0))
        for k, v in extra.items():
            if "rss" in k or "pss" in k or k == "processes":
                self.extra[k] = max(v, self.extra.get(k, v))
            elif first:
                self.extra[k] = v
            elif self.extra.get(k) != v:
                self.extra.setdefault("warning", f"run {len(self.runs) - 1} gave {k}={v}, run 0 {self.extra.get(k)}")

    def logged(self) -> Timing:
        log(f"  {self.name}: {self.mb_s:,.1f} MB/s (median {self.median:.3f} s of {len(self.runs)})")
        return self


def repeat(name: str, nbytes: int, runs: int, fn: Run) -> Timing:
    t = Timing(name, nbytes)
    for _ in range(runs):
        t.run_once(fn)
    return t.logged()


def rounds(steps: Sequence[tuple[str, str, int, Run]], runs: int) -> dict[str, Timing]:
    """``steps`` are (key, name, bytes, run). Every round runs each step once, forwards in even rounds and
    backwards in odd ones, so that no step always follows the same one (a warm cache, a busy neighbour)."""
    timings = {key: Timing(name, nbytes) for key, name, nbytes, _ in steps}
    for i in range(runs):
        for key, _name, _nbytes, fn in (steps if i % 2 == 0 else list(reversed(steps))):
            timings[key].run_once(fn)
    for t in timings.values():
        t.logged()
    return timings


def paired(x: Timing, y: Timing) -> dict[str, float] | None:
    """x's throughput over y's, run by run (both timed in the same rounds, on the same bytes): the median of
    the per-round ratios, and their range."""
    if not x.runs or len(x.runs) != len(y.runs):
        return None
    per_round = [ty / tx for tx, ty in zip(x.runs, y.runs, strict=True) if tx > 0]
    if not per_round:
        return None
    return {"median": round(statistics.median(per_round), 3), "min": round(min(per_round), 3),
            "max": round(max(per_round), 3)}
