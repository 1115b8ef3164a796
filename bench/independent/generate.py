"""python -m bench.independent.generate OUT --seed S --jobs N

Writes OUT/<job>/ (one failed job's logs, laid out as a cluster leaves them) and OUT/labels.jsonl in the
corpus's label schema (../shared/corpus/real/labels.jsonl), with "path" naming the job's directory so that
`score.py OUT/labels.jsonl` runs `firstfault diagnose OUT/<job> --format json` on it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
from collections.abc import Callable
from typing import Any

from . import kinds_hw as H
from . import kinds_sw as S
from .layout import write
from .story import Story
from .topology import Job, make_job

NON_K8S = ["slurm_torchrun", "torchrun_nodes", "srun_direct"]
K8S = ["k8s_torchrun", "k8s_rank_pods"]
ALL = NON_K8S + K8S

# kind -> (what to play, launch styles it is written in, fewest nodes it needs)
KINDS: dict[str, tuple[Callable[[Story], None], list[str], int]] = {
    "xid79": (lambda s: H.xid(s, 79), ALL, 1),
    "xid48": (lambda s: H.xid(s, 48), [*NON_K8S, "k8s_torchrun"], 1),
    "xid94": (lambda s: H.xid(s, 94), NON_K8S, 1),
    "xid119": (lambda s: H.xid(s, 119), [*NON_K8S, "k8s_torchrun"], 1),
    "host_oom_kill": (H.host_oom, NON_K8S, 1),
    "cuda_oom": (S.cuda_oom, ALL, 1),
    "ib_link_down": (H.ib_link_down, ["slurm_torchrun", "torchrun_nodes", "k8s_torchrun"], 2),
    "silent_straggler": (S.straggler, ALL, 1),
    "segfault": (H.segfault, ALL, 1),
    "corrupt_data": (S.corrupt_data, ALL, 1),
    "nccl_version_mismatch": (S.version_mismatch, ["slurm_torchrun", "torchrun_nodes", "srun_direct", "k8s_torchrun"],
                              2),
    "store_host_lost": (H.node_loss, ["slurm_torchrun", "torchrun_nodes", "k8s_torchrun"], 2),
    "scheduler_kill": (S.time_limit, ["slurm_torchrun", "srun_direct"], 1),
    "k8s_oomkilled": (S.k8s_oomkilled, K8S, 1),
    "k8s_evicted": (S.k8s_evicted, K8S, 2),
    "dev_shm_sigbus": (H.shm_sigbus, ["k8s_torchrun", "k8s_rank_pods", "slurm_torchrun", "torchrun_nodes"], 1),
    "checkpoint_hang": (S.ckpt_hang, ALL, 1),
    "config_error_all_ranks": (S.config_error, ALL, 1),
}


def _shape(rng: random.Random, style: str, min_nodes: int) -> tuple[int, int]:
    if style == "k8s_rank_pods":
        return rng.choice([8, 8, 16, 16, 32, 64]), 1
    nproc = rng.choice([8, 8, 8, 4, 2])
    options = [n for n in (1, 2, 2, 4, 4, 8, 16, 32, 64) if n >= min_nodes and 8 <= n * nproc <= 512]
    return rng.choice(options), nproc


def initiating_file(s: Story, files: list[str]) -> str:
    """The file that holds the initiating rank's (or host's) own output, for the consistency test."""
    job = s.job
    ini = s.label["initiating"]
    if ini["rank"] is not None:
        node, lr = job.by_rank(ini["rank"])
        host = node.short
    elif ini["host"]:
        host = ini["host"]
        lr = 0
    else:
        return next(f for f in files if f.startswith(("slurm-", "console/", "pods/")))
    if job.style in ("slurm_torchrun", "torchrun_nodes"):
        return next(f for f in files if f.startswith(f"torchrun_logs/{host}/") and f.endswith(f"/{lr}/stderr.log"))
    if job.style == "srun_direct":
        return f"slurm-{job.slurm_id}.out"
    return f"pods/{host}.log"


def one(rng: random.Random, job_id: str, kind: str, style: str, root: str, seed: int) -> dict[str, Any]:
    fn, _, min_nodes = KINDS[kind]
    n_nodes, nproc = _shape(rng, style, min_nodes)
    job: Job = make_job(rng, job_id, style, n_nodes, nproc)
    story = Story(job=job, record=rng.random() < 0.7)
    fn(story)
    files = write(story, root)
    lab = story.label
    # the kind's own say-so, and the evidence line really on disk: --local-ranks-filter without @record, or
    # torch 2.1's quieter logging, can leave it out of every file
    texts = []
    for f in files:
        with open(os.path.join(root, f), errors="replace") as fh:
            texts.append(fh.read())
    present = lab.pop("cause_line_present") and any(lab["initiating"]["evidence"][:60] in t for t in texts)
    return {"id": job_id, "path": job_id, "source": f"bench.independent (seed {seed})",
            "failure_class": lab["failure_class"], "initiating": lab["initiating"],
            "collateral_signatures": lab["collateral_signatures"], "root_cause": lab["root_cause"], "fix": None,
            "confidence": "high" if present else "medium",
            "notes": f"synthetic: kind {kind}, launch {style}, {job.world} ranks on {n_nodes} nodes x {nproc}, "
                     f"hosts {job.host_style}, torch {'>=2.4' if job.torch_new else '2.1'}, NCCL {job.nccl_version}"
                     f"{', NCCL_DEBUG set' if job.nccl_debug else ''}, cause line "
                     f"{'present' if present else 'missing'}",
            "kind": kind, "launch_style": style, "world_size": job.world, "nodes": n_nodes, "nproc_per_node": nproc,
            "cause_line_present": present, "initiating_file": initiating_file(story, files), "files": len(files)}


def plan(seed: int, n: int) -> list[tuple[str, str]]:
    """Every kind in turn (shuffled once), each occurrence of a kind in its next launch style."""
    rng = random.Random(f"plan-{seed}")
    kinds = sorted(KINDS)
    rng.shuffle(kinds)
    seen: dict[str, int] = {}
    out = []
    for i in range(n):
        k = kinds[i % len(kinds)]
        styles = KINDS[k][1]
        c = seen.get(k, 0)
        seen[k] = c + 1
        out.append((k, styles[(c + seed) % len(styles)]))
    return out


def generate(out: str, seed: int, jobs: int) -> list[dict[str, Any]]:
    os.makedirs(out, exist_ok=True)
    labels = []
    for i, (kind, style) in enumerate(plan(seed, jobs)):
        job_id = f"j{i:03d}"
        root = os.path.join(out, job_id)
        if os.path.exists(root):
            shutil.rmtree(root)
        labels.append(one(random.Random(f"{seed}-{i}"), job_id, kind, style, root, seed))
    with open(os.path.join(out, "labels.jsonl"), "w") as fh:
        for lab in labels:
            fh.write(json.dumps(lab) + "\n")
    return labels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=60)
    a = ap.parse_args()
    labels = generate(a.out, a.seed, a.jobs)
    print(f"wrote {len(labels)} jobs and {os.path.join(a.out, 'labels.jsonl')}")


if __name__ == "__main__":
    main()
