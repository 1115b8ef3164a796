"""Realistic multi-rank training logs of any size, with one planted failure cascade (simulate/training_logs.py,
where the layout and the formats are described), written from the command line.

    python -m bench.generate OUT --ranks 64 --size 200MB --seed 1 [--failure oom_kill|cuda_oom] [--jobs 2]
    python -m bench.generate OUT --ranks 512 --size 400MB --single-file    # one srun -l slurm-JOBID.out
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simulate.training_lines import FAILURES
from simulate.training_logs import SINGLE_FILE, SURVIVORS, generate, human, parse_size

__all__ = ["SINGLE_FILE", "SURVIVORS", "generate", "human", "main", "parse_size"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="output directory (logs go to OUT/logs, the answer to OUT/truth.json)")
    p.add_argument("--ranks", type=int, default=64, help="world size (8 ranks per node); past ~8,192 ranks at "
                   "200 MB use --compact")
    p.add_argument("--size", type=parse_size, default=parse_size("200MB"), help="total size, e.g. 10MB, 2GB")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--failure", choices=FAILURES, default="oom_kill")
    p.add_argument("--victim", type=int, default=None, help="the failing rank (default: chosen by the seed)")
    p.add_argument("--jobs", type=int, default=1, help="writer processes (output is identical for any value)")
    p.add_argument("--compact", action="store_true", help="per rank only NCCL's identity lines, training steps and "
                   "a two-line watchdog timeout (~0.8 KB of fixed lines a rank instead of ~6 KB): 131,072 ranks "
                   "fit in 200 MB")
    p.add_argument("--survivors", choices=SURVIVORS, default="ring", help="ranks that report the victim's lost "
                   "connection (naming its address): its ring neighbours, or every other rank")
    p.add_argument("--single-file", action="store_true",
                   help=f"every rank in one srun -l file, OUT/logs/{SINGLE_FILE} (--jobs is then unused)")
    a = p.parse_args(argv)
    if a.victim is not None and not 0 <= a.victim < a.ranks:
        p.error("--victim must be a rank in [0, ranks)")
    try:
        truth = generate(a.out, a.ranks, a.size, a.seed, a.failure, a.victim, a.jobs, compact=a.compact,
                         survivors=a.survivors, single_file=a.single_file)
    except FileExistsError as exc:
        p.error(str(exc))
    seconds, nbytes = truth["generate_seconds"], truth["bytes"]
    assert isinstance(seconds, float) and isinstance(nbytes, int)
    mbps = nbytes / 1e6 / max(seconds, 1e-9)
    print(f"wrote {human(nbytes)} in {truth['files']} files under {truth['logs']} "
          f"({truth['steps']} steps/rank, {mbps:.0f} MB/s); victim rank {truth['victim']} on "
          f"{truth['victim_host']} ({truth['failure']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
