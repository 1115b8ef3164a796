"""python -m bench.independent5.generate OUT --seed S --jobs N: N labelled failed jobs under OUT/<job>/ and
OUT/labels.jsonl (the corpus schema plus generator fields). Stdlib only; the same seed gives the same bytes."""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

from . import aftermath, apps, ends, launchers
from .kinds import KINDS, LAYOUT_KINDS, failure_class, play
from .labels import label
from .layouts import WRITERS
from .story import Job, new_job

LAYOUTS = tuple(LAYOUT_KINDS)
EPOCH = 1796625000.0  # 2026-12-07 08:30 UTC, near when these jobs "ran"
ENDERS = {"deepspeed_pdsh": launchers.end_deepspeed_pdsh, "mpirun_plain": launchers.end_mpirun_plain,
          "torchx_lightning": ends.end_torchx_lightning, "accelerate_srun": ends.end_accelerate_srun,
          "vllm_serve": ends.end_vllm_serve}


def plan(rng: random.Random, jobs: int) -> list[tuple[str, str]]:
    """Layouts in turn; each layout cycles through its own kinds in a shuffled order."""
    cycles = {lay: [] for lay in LAYOUTS}  # type: dict[str, list[str]]
    out = []
    for i in range(jobs):
        lay = LAYOUTS[i % len(LAYOUTS)]
        if not cycles[lay]:
            cycles[lay] = rng.sample(LAYOUT_KINDS[lay], len(LAYOUT_KINDS[lay]))
        out.append((lay, cycles[lay].pop()))
    return out


def _shape(rng: random.Random, layout: str, kind: str) -> tuple[int, int]:
    if layout == "vllm_serve":
        return (2, 8) if kind == "node_lost" or rng.random() < 0.4 else (1, 8)
    nodes = {"deepspeed_pdsh": (2, 6), "mpirun_plain": (2, 8), "torchx_lightning": (2, 6),
             "accelerate_srun": (2, 4)}[layout]
    return rng.randint(*nodes), rng.choice((8, 8, 4)) if layout != "accelerate_srun" else 8


def _layout_extras(job: Job, idx: int) -> None:
    rng = job.rng
    job.extra["jobid"] = rng.randint(100000, 9999999)
    job.extra["kill_on_bad_exit"] = rng.random() < 0.5
    if job.layout == "torchx_lightning":
        app = f"vit-h14-{''.join(rng.choice('abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(12))}"
        job.extra["app_id"] = app
        nodes = [f"gke-a3mega-gpu-pool-{rng.randint(0, 0xffffffff):08x}-{rng.choice('abcdefgh')}{i}x{i * 7 % 10}q"
                 for i in range(len(job.hosts))]
        pods = [f"{app}-trainer-{i}-0" for i in range(len(job.hosts))]  # Volcano `<job>-<task>-<index>`
        for h, pod in zip(job.hosts, pods, strict=True):
            h.name = pod  # the pod's hostname: what NCCL and torchrun print, and the label's host
        job.extra["pods"] = pods
        job.extra["kernel_names"] = dict(enumerate(nodes))
        job.extra["events"] = [(job.t0 + 0.5 * i, "Normal", "Scheduled", f"pod/{pod}",
                                f"Successfully assigned default/{pod} to {nodes[i]}") for i, pod in enumerate(pods)]
        job.extra["events"] += [(job.t0 + 4 + i, "Normal", "Started", f"pod/{pod}", "Started container trainer")
                                for i, pod in enumerate(pods)]


def _healthy_run(job: Job, tf: float) -> None:
    rng = job.rng
    start = job.t0 + 12
    if job.layout == "vllm_serve":
        job.note("engine", 0, job.t0 + 2, [t for _, t in apps.vllm_server_start(job)], style="app|vllm|INFO|core.py:61")
        for r in range(job.world):
            job.say(r, start + rng.uniform(0, 4), apps.vllm_worker_start(job, r))
    else:
        if job.layout in ("torchx_lightning", "accelerate_srun"):
            for h in range(len(job.hosts)):  # torch/distributed/run.py: the OMP_NUM_THREADS banner, per agent
                job.note("agent", h, job.t0 + 6, ["", "*" * 41, "Setting OMP_NUM_THREADS environment variable for "
                         "each process to be 1 in default, to avoid your system being overloaded, please further "
                         "tune the variable for optimal performance in your application as needed. ", "*" * 41],
                         style="agent|W|run.py:793")
        for r in range(job.world):
            job.say(r, start + rng.uniform(0, 6), apps.rank_startup(job, r))
    if job.kind in ("env_missing", "port_in_use"):
        return
    dt = rng.uniform(0.8, 7.0)
    n_steps = int((tf - start - 60) / dt)
    every = max(1, n_steps // rng.randint(40, 90))
    job.step = n_steps
    job.seq = 3 * n_steps + rng.randint(5, 40)
    loss = rng.uniform(2.0, 3.2)
    for s in range(every, n_steps, every):
        t = start + 60 + s * dt
        if job.layout == "vllm_serve":
            if s % (every * 3) == 0:
                job.note("engine", 0, t, [apps.vllm_metrics(s)[1]], style="app|vllm|INFO|loggers.py:116")
            continue
        for r in (0, job.world - 1):
            line = apps.step_line(job, s, loss * (1 - s / (n_steps * 6)), r)
            if line is not None:
                job.say(r, t, [line])


def build(rng: random.Random, layout: str, kind: str, idx: int) -> Job:
    nodes, nproc = _shape(rng, layout, kind)
    t0 = EPOCH + idx * 5400 + rng.uniform(0, 3000)
    job = new_job(rng, layout, kind, nodes, nproc, t0)
    _layout_extras(job, idx)
    tf = t0 + 8 if kind in ("env_missing", "port_in_use") else t0 + rng.uniform(1500, 6000)
    job.extra["t_fault"] = tf
    _healthy_run(job, tf)
    mode = play(job, tf)
    aftermath.play(job, mode, tf)
    ENDERS[layout](job)
    if kind == "port_in_use":
        for r in range(1, job.world):
            if rng.random() < 0.4:
                from .texts import store_retry
                job.say(r, t0 + 14 + rng.uniform(0, 5), [store_retry(job.hosts[0].name, 29500)])
    return job


def generate(out: Path, seed: int, jobs: int) -> list[dict[str, object]]:
    rng = random.Random(seed * 7919 + 5)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (layout, kind) in enumerate(plan(rng, jobs)):
        jrng = random.Random(rng.randrange(2 ** 62))
        job = build(jrng, layout, kind, i)
        files = WRITERS[layout](job)
        name = f"j{i:03d}"
        for rel, text in sorted(files.items()):
            p = out / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        rows.append(label(job, files, name, failure_class(kind, layout), seed))
    with open(out / "labels.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.independent5.generate", description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=60)
    a = ap.parse_args(argv)
    rows = generate(a.out, a.seed, a.jobs)
    inis: list[dict[str, Any]] = [r["initiating"] for r in rows]  # type: ignore[misc]
    ranks = sum(1 for i in inis if i["rank"] is not None)
    hosts = sum(1 for i in inis if i["rank"] is None and i["host"])
    print(f"{len(rows)} jobs in {a.out}: {ranks} with a rank, {hosts} host-only, {len(rows) - ranks - hosts} neither")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["KINDS", "LAYOUTS", "generate", "re"]
