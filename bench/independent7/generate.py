"""Write N labelled failed jobs: python -m bench.independent7.generate OUT --seed S --jobs N."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from . import apps, clocks, kernel
from .kinds import APPLY
from .labels import label
from .launchers import FINISH
from .layouts import WRITERS
from .story import Job

LAYOUTS = ("flux", "pbs_hydra", "prterun_efa", "pyxis_slurm")
LAYOUT_KINDS = {
    "flux": ("gpu_lost", "ecc", "switch_fatal", "mem_kill", "gpu_mem", "crash", "silent", "host_down", "walltime"),
    "pbs_hydra": ("gpu_lost", "ecc", "mem_kill", "gpu_mem", "crash", "silent", "host_down", "walltime"),
    "prterun_efa": ("gpu_lost", "ecc", "switch_fatal", "mem_kill", "gpu_mem", "crash", "silent", "host_down"),
    "pyxis_slurm": ("gpu_lost", "ecc", "switch_fatal", "mem_kill", "crash", "silent", "host_down", "walltime",
                    "pyxis_fail"),
}
ROOT_CAUSE = {
    "gpu_lost": "GPU fell off the bus (Xid 79) under one rank; its CUDA calls failed and the job came down",
    "ecc": "uncorrectable ECC error (Xid 48/94) on one rank's GPU",
    "switch_fatal": "fatal NVSwitch (SXid) error on one node: every GPU on it lost NVLink",
    "mem_kill": "the kernel OOM killer SIGKILLed one rank (host memory exhausted)",
    "gpu_mem": "CUDA out of memory on one rank",
    "crash": "one rank segfaulted in native code",
    "silent": "one rank stopped issuing collectives; every other rank hit the NCCL watchdog timeout",
    "host_down": "a node was lost; its ranks vanished and their peers failed on the network or timed out",
    "walltime": "the scheduler's wall-clock limit ended the job",
    "pyxis_fail": "pyxis/enroot could not start the container on one node; its tasks never ran",
}
_F58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _hosts(rng: random.Random, layout: str, n: int) -> list[clocks.Host]:
    if layout == "pbs_hydra":
        return clocks.polaris_hosts(rng, n)
    if layout == "prterun_efa" or (layout == "pyxis_slurm" and rng.random() < 0.5):
        return clocks.aws_hosts(rng, n)
    return clocks.hpc_hosts(rng, n)


def build(rng: random.Random, layout: str, kind: str, idx: int) -> Job:
    n = rng.choice((2, 2, 3, 4, 4, 6, 8))
    nproc = 4 if layout == "pbs_hydra" else rng.choice((4, 8, 8))
    t0 = 1796000000 + rng.uniform(0, 86400 * 300)
    hosts = _hosts(rng, layout, n)
    skew = clocks.skew_and_boot(rng, hosts, t0)
    new = rng.random() < 0.7
    transport = "efa" if layout == "prterun_efa" or (layout == "pyxis_slurm" and hosts[0].name.startswith(
        ("ip-", "gpu-st", "train-st", "p5q-st", "compute-st"))) else rng.choice(("ib", "ib", "socket"))
    job = Job(rng=rng, jid=str(rng.randint(100000, 9999999)), layout=layout, kind=kind, hosts=hosts, nproc=nproc,
              by_node=layout == "prterun_efa" and rng.random() < 0.5, t0=t0, new_torch=new,
              nccl_debug=rng.random() < 0.45, flight_recorder=new and rng.random() < 0.5, transport=transport,
              nccl_ver=rng.choice(("2.20.5", "2.21.5", "2.23.4")), timeout_s=rng.choice((600, 900, 1200, 1800)),
              kill_on_bad_exit=rng.random() < 0.5, kernel_logs=rng.random() < 0.78)
    job.pids = [rng.randint(2000, 4_000_000) for _ in range(job.world)]
    job.seq = rng.randint(1500, 90000)
    job.tf = t0 + rng.uniform(900, 5 * 3600)
    limit = int((job.tf - t0) // 3600 + 1) * 3600 if kind == "walltime" else 24 * 3600
    if kind == "walltime":
        job.tf = t0 + limit + rng.uniform(0.5, 40)
    job.label.update(script=rng.choice(("train.py", "pretrain.py", "main.py")), comm_id=rng.randrange(1 << 63),
                     warn_all=rng.random() < 0.4, skew=skew, limit_s=limit, boot_noise=kernel.boot_noise(rng),
                     flux_id="f" + "".join(rng.choice(_F58) for _ in range(rng.randint(9, 11))),
                     pbs_name=rng.choice(("llm_pretrain", "sft-8b", "run42", "ablation_b")),
                     pbs_seq=f"{rng.randint(1000000, 9999999)}", launcher_pid=rng.randint(20000, 90000),
                     domain=rng.choice(("hsn.cm.polaris.alcf.anl.gov", "hsn.cluster.local")),
                     root_cause=ROOT_CAUSE[kind])
    return job


def one(rng: random.Random, out: Path, layout: str, kind: str, idx: int, seed: int) -> dict[str, Any]:
    job = build(rng, layout, kind, idx)
    apps.startup(job)
    if kind != "pyxis_fail":
        apps.training(job, job.tf)
    APPLY[kind](job)
    FINISH[layout](job)
    rel = f"j{idx:03d}"
    WRITERS[layout](job, out / rel)
    return label(job, out, rel, seed)


def plan(rng: random.Random, jobs: int) -> list[tuple[str, str]]:
    decks: dict[str, list[str]] = {lay: [] for lay in LAYOUTS}
    out = []
    for i in range(jobs):
        lay = LAYOUTS[i % len(LAYOUTS)]
        if not decks[lay]:
            decks[lay] = list(LAYOUT_KINDS[lay])
            rng.shuffle(decks[lay])
        out.append((lay, decks[lay].pop()))
    return out


def generate(out: Path, seed: int = 1, jobs: int = 60) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed * 7919 + 7)
    rows = [one(random.Random(rng.getrandbits(64)), out, lay, kind, i, seed)
            for i, (lay, kind) in enumerate(plan(rng, jobs))]
    (out / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=60)
    a = ap.parse_args(argv)
    generate(a.out, a.seed, a.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
