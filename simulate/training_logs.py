"""Realistic multi-rank training logs of any size, with one planted failure cascade, for benchmarks and tests
(`python -m bench.generate` writes them from the command line).

    generate(Path("/tmp/big"), ranks=64, size=200_000_000, seed=1)          # OUT/logs, OUT/truth.json
    python -m bench.generate OUT --ranks 64 --size 200MB --seed 1 [--failure oom_kill|cuda_oom] [--jobs 2]
    python -m bench.generate OUT --ranks 512 --size 400MB --single-file    # one srun -l slurm-JOBID.out

Layout (``firstfault diagnose OUT/logs`` reads it as a job directory)::

    OUT/truth.json                    what was planted (victim rank/host, failure, sizes) -- outside logs/
    OUT/logs/node004/rank37.log       one file per rank, ranks grouped 8 per node directory
    OUT/logs/node004/dmesg.log        per-node kernel log (benign lines; the OOM kill on the victim's node)
    OUT/logs/node004/torchrun.log     per-node torchrun agent log (startup, then the failure table)

``--compact`` keeps of a rank's start-up only NCCL's bootstrap, interface and init lines, and of its ending only
the watchdog's timeout and sequence-number lines (~0.8 KB a rank where the full lines take ~6 KB), so that a
fixed total size holds 131,072 ranks (bench/sweep.py). ``--survivors all`` has every rank, not only the victim's
ring neighbours, report the lost connection naming the victim's address (each such line asks which ranks live on
that host).

With ``--single-file`` the same rank logs go into one ``OUT/logs/slurm-881234.out`` as ``srun -l`` writes it: every
line labelled with its task (``%*d: ``, the global rank), the ranks' lines interleaved in turn (one line of each,
as they print in step), no kernel or torchrun log (srun collects neither), and srun's own exit line for the victim
at the end. That is the input the single-file split (scan/split.py) is for.

Each rank log is: start-up noise (UserWarnings, c10d socket warning, NCCL INFO bootstrap/ring/channel lines),
then N training steps (step/loss lines, data-loader lines, repeated UserWarning/FutureWarning/DeprecationWarning
pairs, periodic NCCL INFO sub-communicator set-up, checkpoint lines), then the cascade: the victim either is
OOM-killed by the host (``oom_kill``: silent, kernel log on its node) or raises ``torch.OutOfMemoryError``
(``cuda_oom``); its ring neighbours report "Connection reset by peer"; every other rank reports the PyTorch NCCL
watchdog timeout ~600 s later. Line formats are those of ``simulate`` (reused, not copied) plus the other real
formats listed above (simulate/training_lines.py). N is calibrated so the whole tree is about ``--size`` bytes.

Writing streams line batches to disk (memory stays bounded by one batch whatever the size); output is
deterministic for a given (ranks, size, seed, failure): every rank has its own seeded RNG, so ``--jobs`` does not
change the bytes. Sizes: decimal units (1 MB = 10**6 bytes); KiB/MiB/GiB are binary.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import random
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

from simulate import GPUS_PER_NODE, START, Cluster, _reset_by_peer
from simulate.hostile_lines import srun_exit
from simulate.training_lines import (
    CHANNELS,
    FAILURES,
    STEP_S,
    FastClock,
    Plan,
    agent_lines,
    compact_startup,
    compact_tail,
    dmesg_lines,
    rank_lines,
    startup_lines,
    step_line,
    watchdog_tail,
)

FLUSH_BYTES = 1 << 18  # bytes buffered per file before a write
SURVIVORS = ("ring", "all")

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 200MB, 1.5GB, 512MiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


# ---------------------------------------------------------------------------------------------------------------
# Writing


@functools.lru_cache(maxsize=4)
def _base_cluster(ranks: int, seed: int, unique_pids: bool = False) -> Cluster:
    """The job's cluster, drawn once per process: drawing it (a pid for every rank) for each rank's file made
    writing quadratic in ranks (16,384 ranks: 148 s for 200 MB).

    ``unique_pids``: no two ranks of a node share a pid, as on a real node. Drawn independently, some node of a job
    of thousands of ranks has two processes of one pid, and the correlator then reads those ranks' lines as
    torchrun's local-rank prefixes (a rebuild of every identity map that only such a job pays)."""
    c = Cluster(ranks, seed)
    if unique_pids:
        taken: set[tuple[str, int]] = set()
        for r in range(ranks):
            while (c.host(r), c.pids[r]) in taken:
                c.pids[r] = 20000 + (c.pids[r] - 20000 + 1) % 60000
            taken.add((c.host(r), c.pids[r]))
    return c


def _cluster(plan: Plan, rank: int | None) -> tuple[Cluster, random.Random]:
    c = copy.copy(_base_cluster(plan.ranks, plan.seed, plan.compact))  # its pids and skews are shared, read only
    rng = random.Random(f"{plan.seed}:{rank}")
    c.rng = rng  # the simulate helpers draw from c.rng: make it per-rank so output is order-independent
    return c, rng


def _write_lines(path: Path, lines: Iterator[str]) -> int:
    written = 0
    batch: list[str] = []
    pending = 0
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            batch.append(line)
            pending += len(line) + 1
            if pending >= FLUSH_BYTES:
                fh.write("\n".join(batch) + "\n")
                written += pending
                batch.clear()
                pending = 0
        if batch:
            fh.write("\n".join(batch) + "\n")
            written += pending
    return written


def _logs(plan: Plan) -> Path:
    return Path(plan.out) / "logs"


def write_rank(plan: Plan, r: int) -> int:
    c, rng = _cluster(plan, r)
    path = _logs(plan) / c.host(r) / f"rank{r}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return _write_lines(path, rank_lines(plan, c, r, rng, plan.steps))


def write_node(plan: Plan, node: int) -> int:
    c, rng = _cluster(plan, -1 - node)
    d = _logs(plan) / f"node{node:03d}"
    d.mkdir(parents=True, exist_ok=True)
    return (_write_lines(d / "dmesg.log", iter(dmesg_lines(plan, c, node, plan.steps, rng)))
            + _write_lines(d / "torchrun.log", iter(agent_lines(plan, c, node, plan.steps, rng))))


SINGLE_FILE = "slurm-881234.out"


def write_single(plan: Plan) -> int:
    """Every rank's lines in one srun -l output file, interleaved a line of each rank in turn."""
    width = len(str(max(0, plan.ranks - 1)))
    streams = []
    for r in range(plan.ranks):
        c, rng = _cluster(plan, r)
        streams.append((f"{r:>{width}}: ", rank_lines(plan, c, r, rng, plan.steps)))

    def interleaved() -> Iterator[str]:
        live = streams
        while live:
            still = []
            for label, lines in live:
                line = next(lines, None)
                if line is None:
                    continue
                still.append((label, lines))
                yield label + line.replace("\n", "\n" + label)
            live = still
        if plan.failure == "oom_kill":  # the kernel's kill reaches srun's output only as the task's end
            c = Cluster(plan.ranks, plan.seed)
            yield srun_exit(c.host(plan.victim), [plan.victim], -9)

    logs = _logs(plan)
    logs.mkdir(parents=True, exist_ok=True)
    return _write_lines(logs / SINGLE_FILE, interleaved())


def calibrate(plan: Plan) -> int:
    """Steps per rank so the tree totals about plan.size bytes (measured on a sample of steps of rank 1)."""
    r = 1 % plan.ranks
    c, rng = _cluster(plan, r)
    if plan.compact:
        fixed = sum(len(x) + 1 for x in (*compact_startup(c, r), *compact_tail(c, r, START, 1)))
    else:
        fixed = sum(len(x) + 1 for x in startup_lines(c, r, START, rng))
        fixed += sum(len(x) + 1 for x in watchdog_tail(c, r, START, 1))
    if plan.survivors == "all":
        fixed += len(_reset_by_peer(c, r, plan.victim, START)) + 1
    sample = 2000
    clock = FastClock(c, r)
    per_step = sum(len(step_line(c, r, s, rng, clock)) + 1 for s in range(sample)) / sample
    # rank 0 prints the full ring once per channel: NCCL's ring line grows with the world size
    ring0 = 0 if plan.compact else CHANNELS * (5 * plan.ranks + 60)
    nodes = max(1, plan.ranks // GPUS_PER_NODE)
    side = nodes * 2600  # dmesg + torchrun logs
    budget = plan.size - side - ring0 - plan.ranks * fixed
    return max(1, int(budget / plan.ranks / per_step))


def generate(out: Path, ranks: int, size: int, seed: int, failure: str = "oom_kill", victim: int | None = None,
             jobs: int = 1, quiet: bool = False, compact: bool = False, survivors: str = "ring",
             single_file: bool = False) -> dict[str, object]:
    if not ranks >= 1:
        raise ValueError("ranks must be >= 1")
    if failure not in FAILURES:
        raise ValueError(f"failure must be one of {FAILURES}")
    if victim is None:
        victim = random.Random(f"victim:{seed}:{ranks}").randrange(ranks)
    if survivors not in SURVIVORS:
        raise ValueError(f"survivors must be one of {SURVIVORS}")
    plan = Plan(str(out), ranks, size, seed, failure, victim, compact=compact, survivors=survivors)
    plan.steps = calibrate(plan)
    plan.t_fail = (START + timedelta(seconds=60 + plan.steps * STEP_S + 1.3)).isoformat()
    logs = _logs(plan)
    if logs.exists() and any(logs.iterdir()):
        raise FileExistsError(f"{logs} is not empty; remove it first")
    logs.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    nodes = max(1, (ranks + GPUS_PER_NODE - 1) // GPUS_PER_NODE)
    total = 0
    if single_file:
        total = write_single(plan)
    elif jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            total += sum(pool.map(write_rank, [plan] * ranks, range(ranks), chunksize=max(1, ranks // (jobs * 8))))
    else:
        for r in range(ranks):
            total += write_rank(plan, r)
            if not quiet and sys.stderr.isatty():
                sys.stderr.write(f"\r  rank {r + 1}/{ranks}  {human(total)}")
    for n in range(0 if single_file else nodes):
        total += write_node(plan, n)
    elapsed = time.perf_counter() - t0
    if not quiet and sys.stderr.isatty():
        sys.stderr.write("\n")
    c = _base_cluster(ranks, seed, compact)
    truth: dict[str, object] = {
        **asdict(plan),
        "scenario": f"bench_{failure}",
        "victim_host": c.host(victim),
        "signature_hint": "oom",
        "logs": str(logs),
        "bytes": total,
        "files": 1 if single_file else ranks + 2 * nodes,
        "generate_seconds": round(elapsed, 2),
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth
