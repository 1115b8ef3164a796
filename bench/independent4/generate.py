"""python -m bench.independent4.generate OUT --seed S --jobs 60: job directories and OUT/labels.jsonl.

Labels follow ../shared/corpus/README.md's schema (id, path, failure_class, initiating {rank, host, evidence},
root_cause, confidence), plus what the generator knows about each job.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

from . import kinds, layouts
from .nccl_torch import Rec
from .story import Job, new_job, progress, startup

WRITERS = {"slurm_tasks": layouts.slurm_tasks, "ray_train": layouts.ray_train, "mpirun_horovod": layouts.mpirun_horovod,
           "kubeflow": layouts.kubeflow, "jax_slurm": layouts.jax_slurm}
SETUP = {"ray_train": layouts.ray_setup, "kubeflow": layouts.kubeflow_setup, "jax_slurm": layouts.jax_setup}
LAYOUTS = layouts.LAYOUTS


def plan(rng: random.Random, jobs: int) -> list[tuple[str, str]]:
    """Layouts in turn; each layout cycles through its own kinds in a shuffled order."""
    queues: dict[str, list[str]] = {lay: [] for lay in LAYOUTS}
    out = []
    for i in range(jobs):
        lay = LAYOUTS[i % len(LAYOUTS)]
        if not queues[lay]:
            queues[lay] = [k for k, (_c, lays) in kinds.KINDS.items() if lay in lays]
            rng.shuffle(queues[lay])
        out.append((lay, queues[lay].pop()))
    return out


def _agent_banner(job: Job) -> None:
    """torchrun's start-up banner in every pod (torch/distributed/run.py: the OMP_NUM_THREADS note)."""
    for h in range(len(job.hosts)):
        job.add(0.2, None, h, "launch", [Rec("agent", "W", "torch/distributed/run.py:793", x) for x in (
            "", "*****************************************", "Setting OMP_NUM_THREADS environment variable for each "
            "process to be 1 in default, to avoid your system being overloaded, please further tune the variable for "
            "optimal performance in your application as needed.", "*****************************************")])


def build(out: Path, idx: int, seed: int, layout: str, kind: str) -> dict:
    rng = random.Random(f"indep4-{seed}-{idx}")
    job = new_job(rng, idx, seed, layout, kind)
    if layout in SETUP:
        SETUP[layout](job)
    if layout == "kubeflow":
        _agent_banner(job)
    startup(job)
    t_f = kinds.apply(job)
    progress(job, t_f)
    jid = f"i4-s{seed}-{idx:03d}-{layout}-{kind}"
    d = out / jid
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    WRITERS[layout](job, d)
    return label(job, out, d, jid)


def label(job: Job, out: Path, d: Path, jid: str) -> dict:
    lab = job.label
    ev = lab["evidence"]
    holders = []
    for p in sorted(d.rglob("*")):
        if p.is_file() and ev in p.read_text(errors="replace"):
            holders.append(str(p.relative_to(d)))
    rank = lab["rank"]
    return {
        "id": jid, "path": str(d.relative_to(out)), "failure_class": lab["failure_class"],
        "initiating": {"rank": rank, "host": lab["host"], "evidence": ev},
        "root_cause": lab["root_cause"], "confidence": "high" if holders else "medium",
        "generator": "bench.independent4", "seed": job.seed, "kind": job.kind, "layout": job.layout,
        "world_size": job.world, "nodes": len(job.hosts), "nproc_per_node": job.ppn,
        "torch_logging": "2.4+" if job.torch_new else "2.1", "nccl_debug": "INFO" if job.nccl_info else
        "WARN" if job.nccl_warn else None, "nccl_version": lab.get("nccl_version"), "ib": job.ib,
        "kernel_logs": job.kernel_logs, "clock_skew_s": round(max(h.skew for h in job.hosts) -
                                                              min(h.skew for h in job.hosts), 2),
        "cause_line_present": bool(holders), "initiating_files": holders,
        "bytes": sum(p.stat().st_size for p in d.rglob("*") if p.is_file()),
    }


def generate(out: Path, seed: int, jobs: int) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"indep4-plan-{seed}")
    rows = [build(out, i, seed, lay, kind) for i, (lay, kind) in enumerate(plan(rng, jobs))]
    (out / "labels.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.independent4.generate", description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=60)
    a = ap.parse_args(argv)
    rows = generate(a.out, a.seed, a.jobs)
    print(f"bench.independent4: {len(rows)} jobs in {a.out} "
          f"({sum(r['initiating']['rank'] is not None for r in rows)} with a rank, "
          f"{sum(r['initiating']['rank'] is None and r['initiating']['host'] is not None for r in rows)} host-only, "
          f"{sum(r['initiating']['host'] is None for r in rows)} job-wide)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
