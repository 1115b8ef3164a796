"""Write N labelled failed distributed-training jobs: python -m bench.independent2.generate OUT --seed S --jobs N.

OUT/<job>/ holds the files a user would hand over; OUT/labels.jsonl has one label per job in the corpus schema.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import layouts_a as A
from . import layouts_b as B
from .kinds import KINDS
from .story import Story
from .topo import Topo, make_topo

Render = Callable[[Topo, Story], dict[str, str]]


@dataclass(frozen=True)
class Layout:
    name: str
    caps: frozenset[str]
    nodes: tuple[int, int]
    nproc: tuple[int, ...]
    render: Render


LAYOUTS = [
    Layout("deepspeed_pdsh", frozenset({"torch", "dmesg", "multi", "shm"}), (2, 8), (4, 8), A.deepspeed_pdsh),
    Layout("accelerate_nodes", frozenset({"torch", "dmesg", "multi", "shm"}), (2, 4), (2, 4, 8), A.accelerate_nodes),
    Layout("mpirun_tag_output", frozenset({"torch", "mpi", "dmesg"}), (1, 8), (1, 2, 4, 8), A.mpirun_tag),
    Layout("horovodrun", frozenset({"torch", "horovod", "dmesg", "shm"}), (1, 4), (2, 4), A.horovodrun),
    Layout("mp_spawn", frozenset({"torch", "dmesg", "shm"}), (1, 1), (2, 4, 8), A.mp_spawn),
    Layout("ray_train", frozenset({"torch", "ray", "multi"}), (2, 8), (1, 2, 4, 8), B.ray_train),
    Layout("jax_multihost", frozenset({"jax", "dmesg", "multi"}), (2, 32), (1,), B.jax_multihost),
    Layout("srun_plain", frozenset({"torch", "slurm", "srun_ranks", "dmesg", "multi", "shm"}), (2, 32), (4, 8),
           B.srun_plain),
    Layout("megatron_torchrun", frozenset({"torch", "megatron", "slurm", "dmesg", "multi", "shm"}), (2, 16), (8,),
           B.megatron_torchrun),
    Layout("kubeflow_pods", frozenset({"torch", "k8s", "multi"}), (2, 32), (1,), B.kubeflow_pods),
]

REQUIRE_EXTRA = {"slurm_oom": {"srun_ranks"}}


def _caps(lay: Layout, topo: Topo, rng: random.Random) -> set[str]:
    caps = set(lay.caps)
    if len(topo.hosts) > 1:
        caps.add("multi")
    if topo.nproc < 2:
        caps.discard("shm")
    elif lay.name in ("mpirun_tag_output",):
        caps.add("shm")
    if lay.name == "deepspeed_pdsh" and rng.random() < 0.4:
        caps.add("megatron")  # Megatron-DeepSpeed
    return caps


def _fits(kind: str, caps: set[str]) -> bool:
    req, forbid, _ = KINDS[kind]
    return (req | REQUIRE_EXTRA.get(kind, set())) <= caps and not (forbid & caps)


def _host_label(lay: Layout, topo: Topo, idx: int) -> str:
    return topo.ips[idx] if lay.name == "ray_train" else topo.hosts[idx]


def make_job(rng: random.Random, lay: Layout, used: dict[str, int]) -> tuple[Topo, Story, str, set[str]]:
    nodes = rng.randint(*lay.nodes)
    nproc = rng.choice(lay.nproc)
    if nodes * nproc < 2:
        nodes = 2
    topo = make_topo(rng, nodes, nproc)
    if lay.name == "kubeflow_pods":
        job = rng.choice(["llm-ft", "bert-pretrain", "resnet-ddp", "gpt-neox-20b"])
        topo.hosts = [f"{job}-master-0"] + [f"{job}-worker-{i}" for i in range(nodes - 1)]
        topo.fqdn = [f"{h}.{job}.default.svc.cluster.local" for h in topo.hosts]
    if lay.name == "ray_train":
        topo.hosts = ["ip-" + ip.replace(".", "-") for ip in topo.ips]
    caps = _caps(lay, topo, rng)
    fits = sorted(k for k in KINDS if _fits(k, caps))
    low = min(used.get(k, 0) for k in fits)
    kind = rng.choice([k for k in fits if used.get(k, 0) == low])
    used[kind] = used.get(kind, 0) + 1
    story = KINDS[kind][2](topo, caps)
    return topo, story, kind, caps


def write_job(out: Path, jid: str, lay: Layout, topo: Topo, st: Story, kind: str, seed: int) -> dict[str, object]:
    files = lay.render(topo, st)
    files.update(st.files)
    d = out / jid
    for rel, text in files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    holders = sorted(rel for rel, text in files.items() if st.evidence and st.evidence in text)
    present = bool(st.present and holders)
    return {
        "id": jid,
        "path": jid,
        "failure_class": st.failure_class,
        "initiating": {
            "rank": st.rank,
            "host": None if st.host is None else _host_label(lay, topo, st.host),
            "evidence": st.evidence,
        },
        "root_cause": st.root_cause,
        "confidence": "high" if present else "medium",
        "generator": "bench.independent2",
        "seed": seed,
        "kind": kind,
        "layout": lay.name,
        "world_size": topo.world,
        "nodes": len(topo.hosts),
        "nproc_per_node": topo.nproc,
        "cause_line_present": present,
        "initiating_files": holders,
        "bytes": sum(len(t) for t in files.values()),
    }


def generate(out: Path, seed: int, jobs: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    order = list(LAYOUTS)
    rng.shuffle(order)
    used: dict[str, int] = {}
    labels = []
    for i in range(jobs):
        lay = order[i % len(order)]
        topo, st, kind, _ = make_job(rng, lay, used)
        labels.append(write_job(out, f"j{i:03d}", lay, topo, st, kind, seed))
    with (out / "labels.jsonl").open("w") as fh:
        for lab in labels:
            fh.write(json.dumps(lab) + "\n")
    return labels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=60)
    a = ap.parse_args(argv)
    labels = generate(a.out, a.seed, a.jobs)
    print(f"wrote {len(labels)} jobs to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
