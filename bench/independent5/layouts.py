"""One writer per launcher layout: the files a user would collect, as {relative path: text}.

While rendering, each writer notes which of the culprit's own lines a reader could attribute to its rank
(a prefix that names the rank or a pid joinable to it), so the label names a rank only where it can be told.
"""

from __future__ import annotations

import base64
import json

from . import clocks as C
from .kernel import smi_query, smi_remap
from .render import agent_line, interleave, kernel_file, rank_line
from .story import Ev, Job

Files = dict[str, str]


def _kern(job: Job, framing: str, name: str) -> Files:
    if not job.kernel_logs:
        return {}
    out = {}
    for h in range(len(job.hosts)):
        evs = [e for e in job.events if e.src == "kernel" and e.host == h]
        if evs or job.rng.random() < 0.6:  # quiet hosts' logs are collected in most jobs
            out[name.format(h=job.extra.get("kernel_names", {}).get(h, job.hosts[h].name))] = \
                kernel_file(job, h, evs, framing)
    return out


def _health(job: Job, path: str) -> Files:
    """An epilogue's nvidia-smi query on every host (or none)."""
    if not job.health:
        return {}
    out = {}
    t = max(e.t for e in job.events) + 40
    for h, host in enumerate(job.hosts):
        if h in job.host_dead:
            continue  # a dead node runs no epilogue
        bad = job.extra.get("bad_bus")
        ecc = job.extra.get("ecc_bus")
        bad_bus = bad[1] if bad and bad[0] == h else None
        ecc_bus = ecc[1] if ecc and ecc[0] == h else None
        lines = smi_query(C.smi(t, host), host.pci_buses[:job.nproc], bad_bus, ecc_bus)
        if ecc_bus:
            lines += ["", *smi_remap(host.pci_buses, ecc_bus)]
        out[path.format(h=host.name)] = "\n".join(lines) + "\n"
    return out


def _clue(job: Job, e: Ev, attributable: bool, why: str) -> None:
    if e.cause and e.rank == job.culprit and attributable and why not in job.rank_clues:
        job.rank_clues.append(why)


def _names_rank(job: Job, e: Ev) -> bool:
    """Whether the process's own line names its rank: c10's `[rankN]:` (torch >= 2.3) or NCCL's host:pid with
    NCCL INFO's pid -> rank join."""
    return (e.style.startswith("c10|") and job.new_torch) or (e.style.startswith("nccl|") and job.nccl_debug)


# --- DeepSpeed over pdsh: one console, every remote line `host: ` -------------------------------------------

def deepspeed_pdsh(job: Job) -> Files:
    names = [h.name for h in job.hosts]
    head = names[0]
    world_info = {n: list(range(job.nproc)) for n in names}
    b64 = base64.urlsafe_b64encode(json.dumps(world_info).encode()).decode()
    t0 = job.t0
    lines = [f"[{C.deepspeed(t0, job.hosts[0], job.container_tz)}] [INFO] [runner.py:607:main] cmd = pdsh -S -f "
             f"1024 -w {','.join(names)} export NCCL_IB_HCA=mlx5; export PYTHONPATH=/workspace/Megatron-DeepSpeed;  "
             f"cd /workspace/Megatron-DeepSpeed; /usr/bin/python3 -u -m deepspeed.launcher.launch "
             f"--world_info={b64} --node_rank=%n --master_addr={head} --master_port=29500 pretrain_gpt.py "
             "--deepspeed --deepspeed_config ds_config.json --tensor-model-parallel-size 2"]
    mapping = {n: [r for r in range(job.world) if job.rank_host[r] == i] for i, n in enumerate(names)}
    for h, n in enumerate(names):  # deepspeed/launcher/launch.py main's start-up logging, per node
        st = C.deepspeed(t0 + 3 + h * 0.2, job.hosts[h], job.container_tz)
        lines += [f"{n}: [{st}] [INFO] [launch.py:146:main] WORLD INFO DICT: {world_info}",
                  f"{n}: [{st}] [INFO] [launch.py:152:main] nnodes={len(names)}, num_local_procs={job.nproc}, "
                  f"node_rank={h}",
                  f"{n}: [{st}] [INFO] [launch.py:163:main] global_rank_mapping=defaultdict(<class 'list'>, "
                  f"{mapping})",
                  f"{n}: [{st}] [INFO] [launch.py:164:main] dist_world_size={job.world}"]
    for e in interleave(job, [e for e in job.events if e.src in ("rank", "agent", "launcher")], 0.3):
        if e.src == "launcher":
            lines.append(e.text)
            continue
        text = rank_line(job, e)
        _clue(job, e, _names_rank(job, e), "own prefix")
        lines.append(f"{names[e.host]}: {text}")
    files = {"train.log": "\n".join(lines) + "\n", "hostfile": "".join(f"{n} slots={job.nproc}\n" for n in names)}
    files.update(_kern(job, "dmesg_t", "dmesg/{h}.log"))
    files.update(_health(job, "health/{h}.csv"))
    return files


# --- Open MPI mpirun without --tag-output: nothing names a rank but the ranks' own words and mpirun's report --

def mpirun_plain(job: Job) -> Files:
    policy = "--map-by node" if job.extra["mpirun_map_by_node"] else f"--map-by ppr:{job.nproc}:node"
    cmd = (f"mpirun -np {job.world} --hostfile hostfile {policy} --bind-to none -x NCCL_DEBUG"
           f"{'=INFO' if job.nccl_debug else ''} -x NCCL_IB_HCA -x MASTER_ADDR={job.hosts[0].name} -x "
           "MASTER_PORT=29500 python pretrain_gpt.py --tensor-model-parallel-size 8 --use-mcore-models\n")
    lines = []
    for e in interleave(job, [e for e in job.events if e.src in ("rank", "launcher")], 0.5):
        if e.src == "launcher":
            lines.append(e.text)
            continue
        _clue(job, e, _names_rank(job, e), "own prefix")
        lines.append(rank_line(job, e))
    files = {"mpirun.out": "\n".join(lines) + "\n", "run.sh": "#!/bin/bash\n" + cmd,
             "hostfile": "".join(f"{h.name} slots={job.nproc}\n" for h in job.hosts)}
    files.update(_kern(job, "journal", "syslog/{h}.log"))
    files.update(_health(job, "health/{h}.csv"))
    return files


# --- torchx dist.ddp on Kubernetes (Volcano): `torchx log` of every replica; events; node journals -----------

def torchx_lightning(job: Job) -> Files:
    chunks: list[list[str]] = []
    for h in range(len(job.hosts)):
        mine = []
        for e in sorted((e for e in job.events if e.host == h and e.src in ("rank", "agent")), key=lambda x: x.t):
            if e.src == "agent":
                text = agent_line(job, e)
            else:  # torchx's dist.ddp runs torchrun --tee 3: `[default<local>]:` on every worker line
                assert e.rank is not None
                text = f"[default{job.local[e.rank]}]:{rank_line(job, e)}"
                _clue(job, e, True, "replica + [defaultN]")
            mine.append(f"trainer/{h} {text}")  # torchx/cli/cmd_log.py print_log_lines: f"{role}/{replica} {line}"
        chunks.append(mine)
    lines: list[str] = []
    pos = [0] * len(chunks)
    while any(p < len(c) for p, c in zip(pos, chunks, strict=True)):  # a thread per replica prints as it reads
        i = job.rng.choice([k for k, c in enumerate(chunks) if pos[k] < len(c)])
        n = job.rng.randint(5, 120)
        lines += chunks[i][pos[i]:pos[i] + n]
        pos[i] += n
    end = max(e.t for e in job.events) + 240
    ev_lines = ["LAST SEEN   TYPE      REASON          OBJECT                                      MESSAGE"]
    for t, typ, reason, obj, msg in sorted(job.extra["events"], key=lambda x: x[0]):
        age = int(end - t)
        seen = f"{age // 60}m{age % 60}s" if age < 3600 else f"{age // 3600}h{age % 3600 // 60}m"
        ev_lines.append(f"{seen:<11} {typ:<9} {reason:<15} {obj:<43} {msg}")
    files = {"torchx-log.txt": "\n".join(lines) + "\n", "events.txt": "\n".join(ev_lines) + "\n"}
    files.update(_kern(job, "journal", "nodes/{h}.log"))
    return files


# --- srun --label running `accelerate launch` once per node ---------------------------------------------------

def accelerate_srun(job: Job) -> Files:
    jid = job.extra["jobid"]
    kob = " --kill-on-bad-exit=1" if job.extra["kill_on_bad_exit"] else ""
    sbatch = (f"#!/bin/bash\n#SBATCH --job-name=sft\n#SBATCH --nodes={len(job.hosts)}\n#SBATCH --ntasks-per-node=1\n"
              f"#SBATCH --gpus-per-node={job.nproc}\n#SBATCH --output=slurm-%j.out\n\n"
              f"srun --label{kob} accelerate launch --multi_gpu --num_machines $SLURM_NNODES --num_processes "
              f"{job.world} --machine_rank $SLURM_NODEID --main_process_ip $MASTER_ADDR --main_process_port 29500 "
              "--rdzv_backend c10d train.py --config sft.yaml\n")
    lines = []
    for e in interleave(job, [e for e in job.events if e.src in ("rank", "agent", "launcher", "stepd")], 0.2):
        if e.src in ("launcher", "stepd"):
            lines.append(e.text)
            continue
        text = agent_line(job, e) if e.src == "agent" else rank_line(job, e)
        if e.src == "rank":
            _clue(job, e, _names_rank(job, e), "own prefix")
        lines.append(f"{e.host}: {text}")  # srun --label: the task id, one task per node
    files = {f"slurm-{jid}.out": "\n".join(lines) + "\n", "job.sbatch": sbatch}
    files.update(_kern(job, "dmesg_raw", "dmesg/{h}.log"))
    files.update(_health(job, "health/{h}.csv"))
    return files


# --- vLLM serve: one console; workers prefixed by their process (vllm/utils.py _add_prefix) ----------------------

def vllm_serve(job: Job) -> Files:
    ray = len(job.hosts) > 1
    lines = []
    for e in interleave(job, [e for e in job.events if e.src in ("rank", "engine")], 0.05):
        if e.src == "engine":
            lines.append(rank_line(job, e) if e.style.startswith("app|") else e.text)
            continue
        r = e.rank
        assert r is not None
        pre = (f"(RayWorkerWrapper pid={job.pids[r]}, ip={job.host_of(r).ip}) " if ray
               else f"(VllmWorker rank={r} pid={job.pids[r]}) ")
        _clue(job, e, True, "worker prefix")
        lines.append(pre + rank_line(job, e))
    files = {"vllm-serve.log": "\n".join(lines) + "\n"}
    files.update(_kern(job, "dmesg_t", "dmesg/{h}.log"))
    files.update(_health(job, "nvidia-smi/{h}.csv"))
    return files


WRITERS = {"deepspeed_pdsh": deepspeed_pdsh, "mpirun_plain": mpirun_plain, "torchx_lightning": torchx_lightning,
           "accelerate_srun": accelerate_srun, "vllm_serve": vllm_serve}
