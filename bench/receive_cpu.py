"""CPU-seconds of the embedded runner's work on a job's shards, by the process clock (a loaded machine stretches
wall time, not these), in one process:

    python -m bench.receive_cpu [--ranks 4096]

One generated job (bench.generate, 50 kB a rank, a planted OOM kill) cut as `firstfault ship` cuts it, then, as
the scan processes and the runner's thread do it (pipeline/scanpool.py, pipeline/embedded.py): every batch of 64
scanned and packed (a scan process's share); every batch read back (unpickled and rebuilt) with the cyclic
collector on, then held off, each while every batch read so far is kept, as the runner keeps them for the
correlation; the batches stored on SQLite, four at a time (the runner's thread). Needs the logs' size in memory.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any


def cpu(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.process_time()
    done = work()
    return time.process_time() - started, done


def main(argv: list[str] | None = None) -> int:
    from bench.generate import generate
    from bench.pipeline import job_event, shards_for
    from pipeline import scanpool
    from pipeline.scanning import arrival
    from pipeline.service import Pipeline
    from pipeline.testing import RecordingScheduler
    from scan.engine import default_matcher
    from schemas.clock import system_clock
    from store.incidents import Store

    p = argparse.ArgumentParser(prog="python -m bench.receive_cpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4096)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ffrecv-") as name:
        tmp = Path(name)
        generate(tmp / "gen", a.ranks, a.ranks * 50_000, seed=7, quiet=True)
        shards = shards_for("j0", tmp / "gen" / "logs")
        matcher = default_matcher()
        scanpool._matcher = matcher  # as the pool's initializer sets it in a scan process
        batches = [shards[i:i + 64] for i in range(0, len(shards), 64)]
        scanning, messages = cpu(lambda: [scanpool._scan([arrival(s) for s in b], 2026) for b in batches])
        with_collector, _ = cpu(lambda: [_read_collected(m) for m in messages])
        held_off, outcomes = cpu(lambda: [scanpool.received(m) for m in messages])
        store = Store.open(f"sqlite:///{tmp}/recv.db")
        pipe = Pipeline(store, matcher, RecordingScheduler(), system_clock, group_wait=timedelta(seconds=240))
        pipe.accept_job(job_event("j0", a.ranks))
        storing, _ = cpu(lambda: [pipe.accept_scanned([s for b in batches[i:i + 4] for s in b],
                                                      [o for out in outcomes[i:i + 4] for o in out])
                                  for i in range(0, len(batches), 4)])
        store.close()
    print(f"# bench.receive_cpu: {a.ranks} ranks, {len(shards)} shards in {len(batches)} batches; CPU-s")
    print(f"scanned and packed (the scan processes): {scanning:.3f}")
    print(f"read back, collector on: {with_collector:.3f}")
    print(f"read back, collector held off (received): {held_off:.3f}")
    print(f"stored (the runner's thread): {storing:.3f}")
    return 0


def _read_collected(message: bytes) -> Any:
    """scanpool.received without holding the collector off, as the executor's thread read a batch before."""
    import pickle

    from correlator.packed import unpack
    from pipeline.scanning import Scanned, Unreadable

    assert gc.isenabled()
    speakers: dict[Any, Any] = {}
    return [out if isinstance(out, Unreadable) else Scanned(unpack(out[0], speakers, None), out[1], out[2])
            for out in pickle.loads(message)]


if __name__ == "__main__":
    sys.exit(main())
