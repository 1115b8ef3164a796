"""CLI: python -m bench.independent3.generate OUT --seed S --jobs N

Writes OUT/<job>/ (one failed job per directory, in one of six launch layouts) and OUT/labels.jsonl in the
corpus schema (../shared/corpus/score.py): id, path, failure_class, initiating {rank, host, evidence},
root_cause, confidence, plus generator fields.
"""

from __future__ import annotations

import argparse
import json
import random
import string
from dataclasses import dataclass
from pathlib import Path

from . import kinds, layouts, lines, topo
from .story import Spec, Story


@dataclass(frozen=True)
class Layout:
    name: str
    launcher: str
    app: str
    host_styles: tuple[str, ...]
    nodes: tuple[int, int]
    nprocs: tuple[int, ...]


LAYOUTS = [
    Layout("lightning_slurm", "srun", "lightning", ("slurm", "onprem"), (1, 8), (4, 8)),
    Layout("nemo_exp_manager", "srun", "nemo", ("slurm", "gcp_vm"), (1, 6), (8,)),
    Layout("deepspeed_rank_logs", "ds", "deepspeed", ("aws_ec2", "onprem", "slurm"), (2, 6), (4, 8)),
    Layout("torchrun_logdir", "agent", "fsdp", ("aws_pcluster", "gcp_vm", "aws_ec2"), (2, 8), (4, 8)),
    Layout("k8s_kubectl_prefix", "agent", "accelerate", ("gke",), (2, 8), (4, 8)),
    Layout("slurm_split_megatron", "srun", "megatron", ("slurm", "onprem", "aws_pcluster"), (2, 8), (8,)),
]
BY_NAME = {lay.name: lay for lay in LAYOUTS}
NEEDS_TWO_NODES = {"node_loss", "nic_flap"}
KERNEL_KINDS = {
    "xid79",
    "pcie_aer_xid79",
    "xid48",
    "xid94",
    "xid95",
    "xid119",
    "host_oom",
    "nfs_stall",
    "nic_flap",
    "ckpt_hang",
}
T_BASE = 1796601600.0  # 2026-12-07 00:00:00 UTC


def _rand(rng: random.Random, n: int, alphabet: str = string.ascii_lowercase + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def plan(seed: int, jobs: int) -> list[tuple[str, str]]:
    rng = random.Random(f"indep3-plan-{seed}")
    ks = []
    while len(ks) < jobs:
        block = list(kinds.KINDS)
        rng.shuffle(block)
        ks += block
    lays = [LAYOUTS[i % len(LAYOUTS)].name for i in range(jobs)]
    rng.shuffle(lays)
    return list(zip(lays, ks[:jobs], strict=False))


def build_job(seed: int, i: int, layout: str, kind: str):
    rng = random.Random(f"indep3-{seed}-{i}")
    lay = BY_NAME[layout]
    lo, hi = lay.nodes
    if kind in NEEDS_TWO_NODES:
        lo = max(lo, 2)
    nodes = rng.randint(lo, hi)
    nproc = rng.choice(lay.nprocs)
    style = rng.choice(lay.host_styles)
    t0 = T_BASE + rng.uniform(0, 6 * 86400)
    big_skew = rng.random() < 0.33
    hosts = topo.make_hosts(rng, nodes, style, nproc, t0, big_skew)
    # node ranks: c10d rendezvous assigns them in arrival order (shuffled against the host list); hostfile,
    # srun and pod-index layouts keep the list order
    order = list(range(nodes))
    if layout == "torchrun_logdir":
        rng.shuffle(order)
    for h, nr in zip(hosts, order, strict=False):
        h.node_rank = nr
    extra: dict = {}
    if layout == "k8s_kubectl_prefix":
        flavor = rng.choice(["trainjob", "jobset", "volcano"])
        name = rng.choice(["llama3-sft", "qwen2-pt", "mixtral-ft", "gemma-dpo"]) + "-" + _rand(rng, 4)
        for h in hosts:
            h.k8s_node = h.short
            if flavor == "trainjob":
                h.pod = f"{name}-node-0-{h.index}-{_rand(rng, 5)}"
            elif flavor == "jobset":
                h.pod = f"{name}-workers-0-{h.index}-{_rand(rng, 5)}"
            else:
                h.pod = f"{name}-worker-{h.index}"
            h.fqdn = f"{h.pod}.{name}.default.svc.cluster.local"
        extra.update(
            flavor=flavor,
            container={"trainjob": "node", "jobset": "pytorch", "volcano": "trainer"}[flavor],
            workload=f"{ {'trainjob': 'trainjob', 'jobset': 'jobset', 'volcano': 'pod'}[flavor] }-{name}-"
            f"{_rand(rng, 5)}",
            owner=f"{'vcjob' if flavor == 'volcano' else 'jobset'}/{name}",
            task="worker",
            uid1=f"{_rand(rng, 8, '0123456789abcdef')}-{_rand(rng, 4, '0123456789abcdef')}-4"
            f"{_rand(rng, 3, '0123456789abcdef')}-a{_rand(rng, 3, '0123456789abcdef')}-"
            f"{_rand(rng, 12, '0123456789abcdef')}",
            uid2=f"{_rand(rng, 8, '0123456789abcdef')}-{_rand(rng, 4, '0123456789abcdef')}-4"
            f"{_rand(rng, 3, '0123456789abcdef')}-b{_rand(rng, 3, '0123456789abcdef')}-"
            f"{_rand(rng, 12, '0123456789abcdef')}",
            launcher=rng.choice(["torchrun", "accelerate"]),
            tee=rng.random() < 0.4,
            record=rng.random() < 0.5,
            run_id=name,
        )
    if lay.launcher == "srun":
        jid = rng.randint(100000, 9999999)
        arr = None
        if rng.random() < 0.45:
            arr = f"{jid - rng.randint(1, 40)}_{rng.randint(0, 15)}"
        extra.update(
            slurm_job=str(jid),
            array=arr,
            label=layout == "slurm_split_megatron" or rng.random() < 0.5,
            nodelist=",".join(h.short for h in hosts),
            name=rng.choice(["gpt3-175b", "llama-70b", "pretrain"]),
        )
    if layout == "torchrun_logdir":
        extra.update(
            run_id=rng.choice(["fsdp-llama", "none", str(rng.randint(1000, 99999))]),
            rand=_rand(rng, 8),
            tee=rng.random() < 0.5,
            record=rng.random() < 0.6,
        )
    new = rng.random() < 0.65
    restarts = 0
    if layout == "torchrun_logdir" and kind not in kinds.JOB_WIDE and kind != "node_loss":
        restarts = rng.choice([0, 1, 2, 3])
    spec = Spec(
        job=f"j{i:03d}",
        layout=layout,
        kind=kind,
        nodes=nodes,
        nproc=nproc,
        launcher=lay.launcher,
        kill_on_bad_exit=rng.random() < 0.5,
        new_torch=new,
        nccl_debug=rng.random() < 0.5,
        nccl_ver=rng.choice(lines.NCCL_VERSIONS),
        ib=rng.random() < 0.7,
        iface=rng.choice(["eth0", "ens5", "bond0", "enp6s0"]),
        timeout_s=rng.choice([600, 600, 1800, 300, 120, 900]),
        fr=new and rng.random() < 0.3,
        app=lay.app,
        kernel_collected=rng.random() < (0.8 if kind in KERNEL_KINDS else 0.6),
        poll=0.1 if new else 5.0,
        libdir="/usr/local/lib/python3.10/dist-packages/torch/lib",
        script="train.py",
        max_restarts=restarts,
        elastic_info=rng.random() < 0.5,
    )
    stories = []
    fix: dict = {}
    label = None
    t = t0
    for k in range(restarts + 1):
        st = Story(random.Random(f"indep3-{seed}-{i}-{k}"), spec, hosts, t, attempt=k)
        if spec.nccl_debug:
            _nccl_init(st)
        lab = kinds.apply(kind, st, fix)
        if k == 0:
            label = lab
        stories.append(st)
        t = max(d.t for d in st.deaths.values()) + rng.uniform(20, 70)
    return rng, spec, hosts, stories, label, extra


def _nccl_init(st: Story) -> None:
    sp = st.spec
    comm = f"0x{st.rng.randint(1 << 40, 1 << 44):x}"
    for r in range(st.world):
        h = st.host(r)
        t = st.t_train - st.rng.uniform(5, 20)
        for ln in lines.nccl_init_lines(
            st.nccl_host(r),
            st.pid(r),
            st.tids[r],
            st.local(r),
            r,
            st.world,
            h.ip,
            sp.iface,
            sp.nccl_ver,
            st.bus(r),
            comm,
            sp.ib,
            r == 0,
        ):
            st.say(r, t, ln, "out")
            t += 0.003


def _text_files(files: dict) -> dict[str, str]:
    return {p: v for p, v in files.items() if isinstance(v, str)}


def generate(out: Path | str, seed: int = 1, jobs: int = 60) -> list[dict]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    labels = []
    for i, (layout, kind) in enumerate(plan(seed, jobs)):
        rng, spec, hosts, stories, lab, extra = build_job(seed, i, layout, kind)
        ctx = layouts.Ctx(rng, spec, hosts, stories, lab, extra.get("slurm_job", spec.job), extra)
        layouts.LAYOUTS[layout](ctx)
        evidence = ctx.ev.get("evidence") or lab.evidence or f"(no line names it: {lab.root_cause})"
        truncated = None
        if rng.random() < 0.15:  # collected with `tail -c`: the biggest text file starts mid-line
            big = max(_text_files(ctx.files).items(), key=lambda kv: len(kv[1]))
            if len(big[1]) > 20000:
                cut = int(len(big[1]) * rng.uniform(0.1, 0.35))
                ctx.files[big[0]] = big[1][cut:]
                truncated = big[0]
        jdir = out / spec.job
        for p, v in sorted(ctx.files.items()):
            fp = jdir / p
            fp.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(v, bytes):
                fp.write_bytes(v)
            else:
                fp.write_text(v, encoding="utf-8")
        holders = sorted(p for p, v in _text_files(ctx.files).items() if evidence in v)
        present = bool(holders)
        size = sum(len(v) if isinstance(v, bytes) else len(v.encode()) for v in ctx.files.values())
        labels.append(
            {
                "id": spec.job,
                "path": spec.job,
                "failure_class": lab.failure_class,
                "initiating": {"rank": lab.rank, "host": lab.host, "evidence": evidence},
                "root_cause": lab.root_cause,
                "confidence": "high" if present else "medium",
                "generator": "independent3",
                "seed": seed,
                "kind": kind,
                "layout": layout,
                "world_size": spec.world,
                "nodes": spec.nodes,
                "nproc_per_node": spec.nproc,
                "restarts": len(stories) - 1,
                "torch_logging": "2.4+" if spec.new_torch else "2.1",
                "nccl_debug": spec.nccl_debug,
                "kernel_logs": spec.kernel_collected,
                "clock_skew_s": round(max(h.skew for h in hosts) - min(h.skew for h in hosts), 1),
                "truncated_head": truncated,
                "cause_line_present": present,
                "initiating_files": holders,
                "bytes": size,
            }
        )
    with open(out / "labels.jsonl", "w", encoding="utf-8") as fh:
        for lab in labels:
            fh.write(json.dumps(lab) + "\n")
    return labels


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=60)
    a = ap.parse_args(argv)
    labs = generate(a.out, a.seed, a.jobs)
    n_ini = sum(1 for x in labs if x["initiating"]["rank"] is not None or x["initiating"]["host"])
    print(
        f"wrote {len(labs)} jobs to {a.out} ({n_ini} with an initiating rank or host, "
        f"{sum(x['cause_line_present'] for x in labs)} with the cause line in the files)"
    )


if __name__ == "__main__":
    main()
