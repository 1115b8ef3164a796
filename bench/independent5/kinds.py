"""Failure kinds: what starts each failure, on which rank or host, and what the label says.

Each `play_<kind>` puts the initiating events on the job (kernel lines, the culprit's own lines, its end) and
returns the mode `aftermath.py` plays the collateral from: `exit` (the culprit's process is gone), `hang` (it
is alive but never enqueues the next collective), `host` (the whole host vanished), `link` (an IB port flapped),
`job` (every rank fails the same way at once), `none` (the fault's own play ends the job).
"""

from __future__ import annotations

from collections.abc import Callable

from . import kernel as K
from .story import Job
from .texts import (
    cuda_error_in_step,
    cuda_error_in_watchdog,
    cuda_oom,
    dcp_save_start,
    module_missing,
    port_in_use,
    py_traceback,
    segv,
)

# kind -> (failure_class, level): level "rank" (rank + host), "host" (host only), "job" (neither)
KINDS: dict[str, tuple[str, str]] = {
    "xid79": ("xid_79", "rank"),
    "ecc": ("gpu_uncorrectable_ecc", "rank"),
    "xid119": ("node_unresponsive_cuda_unknown_error", "rank"),
    "host_oom": ("rank_process_killed_sigkill_host_oom", "rank"),
    "segv": ("rank_segfault_sigsegv", "rank"),
    "cuda_oom": ("cuda_oom", "rank"),
    "ckpt_hang": ("dcp_checkpoint_save_hang", "rank"),
    "straggler": ("nccl_watchdog_timeout_straggler_rank", "rank"),
    "port_in_use": ("master_port_in_use_launcher_misconfig", "rank"),
    "ib_flap": ("nccl_ib_completion_error", "host"),
    "node_lost": ("node_loss_peer_processes_killed", "host"),
    "preempt": ("workers_killed_sigterm_external", "job"),
    "env_missing": ("python_env_module_missing_all_ranks", "job"),
}

LAYOUT_KINDS: dict[str, tuple[str, ...]] = {
    "deepspeed_pdsh": ("xid79", "ecc", "host_oom", "segv", "cuda_oom", "ckpt_hang", "straggler", "ib_flap",
                       "node_lost", "env_missing"),
    "mpirun_plain": ("xid79", "ecc", "xid119", "host_oom", "segv", "cuda_oom", "straggler", "ib_flap", "node_lost",
                     "port_in_use"),
    "torchx_lightning": ("xid79", "ecc", "host_oom", "segv", "cuda_oom", "ckpt_hang", "straggler", "ib_flap",
                         "preempt", "env_missing"),
    "accelerate_srun": ("xid79", "ecc", "xid119", "host_oom", "cuda_oom", "ckpt_hang", "straggler", "node_lost",
                        "preempt", "segv"),
    "vllm_serve": ("xid79", "ecc", "xid119", "host_oom", "segv", "cuda_oom", "node_lost", "env_missing"),
}


def failure_class(kind: str, layout: str) -> str:
    if kind == "node_lost":
        return {"accelerate_srun": "slurm_node_failure", "vllm_serve": "node_lost_ray_heartbeat_missed"}.get(
            layout, "node_loss_peer_processes_killed")
    if kind == "preempt" and layout == "torchx_lightning":
        return "k8s_jobset_failfast_pod_deleted"
    return KINDS[kind][0]


def _frames(job: Job) -> list[tuple[str, int, str, str]]:
    script = {"deepspeed_pdsh": "/workspace/Megatron-DeepSpeed/pretrain_gpt.py",
              "mpirun_plain": "/workspace/megatron-lm/pretrain_gpt.py", "torchx_lightning": "/app/train.py",
              "accelerate_srun": "/home/ml/sft/train.py",
              "vllm_serve": "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py"}[job.layout]
    return [(script, 231, "train_step", "loss = model(batch)"),
            ("/opt/venv/lib/python3.10/site-packages/torch/nn/modules/module.py", 1747, "_call_impl",
             "return forward_call(*args, **kwargs)")]


def _bus(job: Job, r: int) -> str:
    return job.host_of(r).pci_buses[job.local[r]]


def _pick(job: Job) -> int:
    return job.rng.randrange(job.world)


def play(job: Job, tf: float) -> str:
    mode: str = PLAYS[job.kind](job, tf)
    return mode


def play_xid79(job: Job, tf: float) -> str:
    c = job.culprit = _pick(job)
    h = job.rank_host[c]
    lines = K.xid79(_bus(job, c))
    job.note("kernel", h, tf, lines)
    job.evidence, job.root_cause = lines[2], "the GPU of the rank fell off the PCIe bus (Xid 79)"
    t = tf + job.rng.uniform(0.3, 3.0)
    if job.new_torch and job.rng.random() < 0.5:
        job.say(c, t, cuda_error_in_watchdog(c, "unspecified launch failure"), cause=True)
        job.end(c, t + 0.2, -6)
    else:
        job.say(c, t, cuda_error_in_step("unspecified launch failure", _frames(job)), cause=True)
        job.end(c, t + 0.5, 1)
    job.extra["bad_bus"] = (h, _bus(job, c))
    return "exit"


def play_ecc(job: Job, tf: float) -> str:
    c = job.culprit = _pick(job)
    h = job.rank_host[c]
    lines = (K.xid48 if job.rng.random() < 0.5 else K.xid94)(_bus(job, c), job.pids[c])
    job.note("kernel", h, tf, lines)
    job.evidence, job.root_cause = lines[0], "an uncorrectable ECC error on the rank's GPU"
    t = tf + job.rng.uniform(0.1, 1.5)
    job.say(c, t, cuda_error_in_step("uncorrectable ECC error encountered", _frames(job)), cause=True)
    job.end(c, t + 0.4, 1)
    job.extra["ecc_bus"] = (h, _bus(job, c))
    return "exit"


def play_xid119(job: Job, tf: float) -> str:
    c = job.culprit = _pick(job)
    h = job.rank_host[c]
    lines = K.xid119(_bus(job, c), job.pids[c])
    job.note("kernel", h, tf, lines[:2])
    job.note("kernel", h, tf + 45, lines[2:])
    job.evidence, job.root_cause = lines[0], "the GPU's GSP firmware stopped answering (Xid 119); CUDA calls fail"
    t = tf + job.rng.uniform(50, 130)
    job.say(c, t, cuda_error_in_step("unknown error", _frames(job)), cause=True)
    job.end(c, t + 0.4, 1)
    return "exit"


def play_host_oom(job: Job, tf: float) -> str:
    c = job.culprit = _pick(job)
    comm = job.rng.choice(("python3", "pt_main_thread", "python"))
    lines = K.oom_kill(job.pids[c], comm, job.rng.randint(180_000_000, 260_000_000))
    job.note("kernel", job.rank_host[c], tf, lines)
    job.evidence, job.root_cause = lines[2], "the kernel's OOM killer killed the rank (host memory exhausted)"
    job.end(c, tf + 0.01, -9)
    return "exit"


def play_segv(job: Job, tf: float) -> str:
    c = job.culprit = _pick(job)
    lib = job.rng.choice(("libtransformer_engine.so", "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so"))
    job.say(c, tf, segv(f"0x00007f{job.pids[c]:08x}", [f'File "{_frames(job)[0][0]}", line 231 in train_step',
                                                      'File "/opt/venv/lib/python3.10/site-packages/torch/nn/modules/'
                                                      'module.py", line 1747 in _call_impl']), cause=True)
    kline = K.segfault("python3", job.pids[c], lib)
    job.note("kernel", job.rank_host[c], tf + 0.01, [kline])
    job.evidence = kline if job.kernel_logs else "Fatal Python error: Segmentation fault"
    job.root_cause = f"the rank segfaulted in {lib}"
    job.end(c, tf + 0.05, -11)
    return "exit"


def play_cuda_oom(job: Job, tf: float) -> str:
    c = job.culprit = _pick(job)
    text = cuda_oom(job.local[c], job.rng.choice((1.25, 2.5, 4.0, 8.0)), job.rng.uniform(0.2, 1.1),
                    job.rng.uniform(76.5, 78.6))
    frames = _frames(job)
    if job.layout == "vllm_serve":
        frames = [(frames[0][0], 212, "determine_available_memory", "self.model_runner.profile_run()")]
    job.say(c, tf, py_traceback(frames, text), cause=True)
    job.evidence, job.root_cause = text.split(". Tried")[0] + ". Tried" + text.split(". Tried")[1][:40], \
        "the rank ran out of GPU memory"
    job.end(c, tf + 0.6, 1)
    return "exit"


def play_ckpt_hang(job: Job, tf: float) -> str:
    c = job.culprit = _pick(job)
    step = job.step
    for r in range(job.world):
        if r == 0 or job.rng.random() < 0.15:
            job.say(r, tf - 0.5, [dcp_save_start(step, "/lustre/ckpt/run42")])
    secs = job.rng.choice((122, 245, 368))
    lines = [*K.hung_task("pt_main_thread", job.pids[c], secs), K.lustre_stall("scratch-OST0013")]
    job.note("kernel", job.rank_host[c], tf + 5, lines[-1:])
    job.note("kernel", job.rank_host[c], tf + secs, lines[:-1])
    job.evidence = lines[0]
    job.root_cause = "the rank's checkpoint write hung on Lustre (D state); the others waited in DCP's collective"
    return "hang"


def play_straggler(job: Job, tf: float) -> str:
    job.culprit = _pick(job)
    job.evidence = ""  # set by aftermath when the flight recorder names it
    job.root_cause = "one rank stopped issuing collectives (stuck in its input pipeline); the others timed out"
    return "hang"


def play_port_in_use(job: Job, tf: float) -> str:
    c = job.culprit = 0
    lines = port_in_use(29500)
    job.say(c, job.t0 + 20, lines, cause=True)
    job.evidence = lines[-1][1]
    job.root_cause = "the rendezvous port 29500 was already in use on the master host"
    job.end(c, job.t0 + 21, 1)
    return "none"


def play_ib_flap(job: Job, tf: float) -> str:
    job.ib = True
    h = job.rng.randrange(len(job.hosts))
    job.culprit_host = h
    bus = job.rng.choice(("1a", "3c", "4d", "9c"))
    down = K.mlx5_port(bus, False)
    job.note("kernel", h, tf, [down, K.mlx5_link(bus, f"ibp{int(bus, 16)}s0", False)])
    job.note("kernel", h, tf + job.rng.uniform(4, 11), [K.mlx5_port(bus, True),
                                                       K.mlx5_link(bus, f"ibp{int(bus, 16)}s0", True)])
    job.evidence = down
    job.root_cause = "an InfiniBand port on the host went down and came back; NCCL's queue pairs failed"
    return "link"


def play_node_lost(job: Job, tf: float) -> str:
    h = job.rng.randrange(1, len(job.hosts)) if len(job.hosts) > 1 else 0
    job.culprit_host = h
    job.kill_host(h, tf)
    job.root_cause = "the host stopped responding (lost power / kernel hang); its processes vanished"
    return "host"


def play_preempt(job: Job, tf: float) -> str:
    job.root_cause = "the scheduler preempted the job: every worker got SIGTERM"
    return "job"


def play_env_missing(job: Job, tf: float) -> str:
    mod = job.rng.choice(("transformer_engine", "flash_attn", "apex", "deepspeed.ops.adam"))
    script = _frames(job)[0][0]
    lines = module_missing(mod, script)
    for r in range(job.world):
        job.say(r, job.t0 + 8 + job.rng.uniform(0, 3), lines)
        job.end(r, job.t0 + 12 + job.rng.uniform(0, 1), 1)
    job.evidence, job.root_cause = lines[-1][1], f"the image lacks the Python module {mod!r} (every rank)"
    return "none"


PLAYS: dict[str, Callable[[Job, float], str]] = {kind: globals()[f"play_{kind}"] for kind in KINDS}
