"""CPU-seconds of what is left after a job's last shard, in one process, by the process clock (a loaded machine
stretches wall time, not these):

    python -m bench.correlate_cpu [--ranks 4096] [--jobs 2] [--rounds 3]

A Pipeline on SQLite stores `--jobs` copies of one generated job (bench.generate, 50 kB a rank, a planted OOM
kill) as the workers do, keeping their scans (pipeline/recent.py), then measures, alternating in each round:
the job's shards listed from the store (what a correlation did to check it kept them all) against counted; and
merging and diagnosing the kept scans with the cyclic collector on against held off (what correlate does now).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from bench.generate import generate
from bench.pipeline import job_event, shards_for


def cpu(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    from correlator.diagnose import diagnose
    from correlator.shards import merge
    from pipeline.service import Pipeline
    from pipeline.testing import RecordingScheduler
    from scan.engine import default_matcher
    from schemas.clock import system_clock
    from store.incidents import Store

    p = argparse.ArgumentParser(prog="python -m bench.correlate_cpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4096)
    p.add_argument("--jobs", type=int, default=2, help="jobs whose scans the worker keeps")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ffcpu-") as name:
        tmp = Path(name)
        generate(tmp / "gen", a.ranks, a.ranks * 50_000, seed=7, quiet=True)
        matcher = default_matcher()
        store = Store.open(f"sqlite:///{tmp}/cpu.db")
        pipe = Pipeline(store, matcher, RecordingScheduler(), system_clock, group_wait=timedelta(seconds=240))
        stored = []
        for j in range(a.jobs):
            shards = shards_for(f"j{j}", tmp / "gen" / "logs")
            pipe.accept_job(job_event(f"j{j}", a.ranks))
            stored.append(cpu(lambda s=shards: [pipe.accept_shards(s[i:i + 64])  # type: ignore[misc]
                                               for i in range(0, len(s), 64)]) / len(shards))
        job = f"j{a.jobs - 1}"
        view = pipe._view(job)
        runs: dict[str, list[float]] = {k: [] for k in ("listed", "counted", "collector on", "collector off")}
        for _ in range(a.rounds):
            runs["listed"].append(cpu(lambda: store.job(job, scans=False)))
            runs["counted"].append(cpu(lambda: store.job(job, listed=False)))
            for on in (True, False):
                (gc.enable if on else gc.disable)()
                runs["collector on" if on else "collector off"].append(cpu(lambda: diagnose(
                    merge(view.shards), matcher.catalog, view.event.rank_hosts if view.event else None)))
                gc.enable()
        store.close()
    print(f"# bench.correlate_cpu: {a.ranks} ranks, {len(view.shards)} shards, {a.jobs} jobs kept, "
          f"{a.rounds} rounds; CPU-s, median (min-max)")
    print(f"storing a shard (scan and SQLite): {statistics.median(stored) * 1000:.2f} ms")
    for what, values in runs.items():
        print(f"{what}: {statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
