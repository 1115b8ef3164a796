"""What each rank prints while healthy: NCCL's start-up (with NCCL_DEBUG=INFO), the training script's lines, and
the distractors real jobs carry.

- NCCL ``NCCL version 2.21.5+cuda12.4`` (rank 0), ``Bootstrap : Using eth0:IP<0>``, ``comm 0x… rank R nranks W
  cudaDev L nvmlDev L busId B commId 0x… - Init COMPLETE``: NVIDIA/nccl src/init.cc, bootstrap.cc (as
  bench/independent{3,5}'s READMEs transcribe them).
- Megatron-LM ``training_log`` line (`` [date] iteration N/ M | consumed samples: … | lm loss: … |``, printed by
  the last rank): NVIDIA/Megatron-LM megatron/training/training.py.
- Hugging Face Trainer's log dicts (``{'loss': …, 'grad_norm': …, 'learning_rate': …, 'epoch': …}``): transformers
  trainer.py ``log``.
- c10d client retry ``[c10d] The client socket has failed to connect to [H]:29500 (errno: 111 - Connection
  refused).``: torch/csrc/distributed/c10d/socket.cpp (as bench/independent{4,5}'s READMEs cite it)."""

from __future__ import annotations

from .clocks import iso, local, py_logging, raw_dmesg, rfc3339_us, short_iso, syslog
from .story import Job
from .texts import c10_line

APP = {"flux": "logging", "pbs_hydra": "logging", "prterun_efa": "hf", "pyxis_slurm": "megatron"}


def startup(job: Job) -> None:
    rng = job.rng
    t = job.t0 + rng.uniform(8, 25)
    store = job.hosts[job.host_of(0)].name
    for r in range(job.world):
        lr, h = job.local_of(r), job.hosts[job.host_of(r)]
        tr = t + rng.uniform(0, 4)
        if job.new_torch and r != 0 and rng.random() < 0.25:
            job.say(r, tr - rng.uniform(2, 6), c10_line(True, r, job.tl(r, tr - 3), "W", "socket.cpp:752",
                    f"[c10d] The client socket has failed to connect to [{store}]:29500 (errno: 111 - Connection "
                    "refused)."))
        job.say(r, tr, f"[local_rank {lr}] world_size={job.world} device=cuda:{lr}", err=False)
        if job.nccl_debug and job.kind != "pyxis_fail":  # a node that never started: no communicator
            if r == 0:
                job.say(r, tr + 0.5, job.nccl_line(r, "INFO", f"NCCL version {job.nccl_ver}+cuda12.4"))
            job.say(r, tr + 0.6, job.nccl_line(r, "INFO", f"Bootstrap : Using eth0:{h.ip}<0>"))
            bus = h.buses[lr]
            job.say(r, tr + 2.1, job.nccl_line(r, "INFO", f"comm 0x{rng.randrange(1 << 44):x} rank {r} nranks "
                                               f"{job.world} cudaDev {lr} nvmlDev {lr} busId {bus}000 commId "
                                               f"0x{job.label['comm_id']:x} - Init COMPLETE"))
        if job.label["warn_all"]:
            job.say(r, tr + 2.5, ["/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:1399: "
                                  "FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                                  "`torch.amp.autocast('cpu', args...)` instead.",
                                  "  with device_autocast_ctx, torch.cpu.amp.autocast(**cpu_autocast_kwargs), "
                                  "recompute_context:  # type: ignore[attr-defined]"])


def training(job: Job, until: float) -> None:
    """Progress lines from the rank that logs them, every 20-90 s, until the fault."""
    rng = job.rng
    style = APP[job.layout]
    who = job.world - 1 if style == "megatron" else 0
    step, t = rng.randint(10, 400), job.t0 + rng.uniform(60, 120)
    total = rng.choice((100000, 250000, 500000))
    every = rng.uniform(20, 90)
    while t < until:
        loss = 2.0 + 6.0 / (1 + step / 500) + rng.uniform(-0.05, 0.05)
        tl = job.tl(who, t)
        if style == "megatron":
            line = (f" [{iso(tl, frac=0)}] iteration {step:8d}/{total:8d} | consumed samples: {step * 256:12d} | "
                    f"elapsed time per iteration (ms): {every * 1000 / 10:.1f} | learning rate: 3.000000E-04 | "
                    f"global batch size:   256 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: "
                    f"{rng.uniform(0.3, 1.4):.3f} | number of skipped iterations:   0 | number of nan iterations:"
                    "   0 |")
        elif style == "hf":
            line = (f"{{'loss': {loss:.4f}, 'grad_norm': {rng.uniform(0.3, 1.4):.4f}, 'learning_rate': "
                    f"{3e-5 * (1 - step / total):.4e}, 'epoch': {step / 4000:.2f}}}")
        else:
            line = f"{py_logging(tl)} - train - INFO - step {step} | loss {loss:.4f} | {every / 10:.2f} s/it"
        job.say(who, t, line, err=False)
        step += 10
        t += every


def kernel_stamp(job: Job, hi: int, t: float, style: str) -> str:
    """Frame for a kernel line on host hi at true time t."""
    h = job.hosts[hi]
    if style == "syslog":
        return f"{syslog(local(h, t))} {h.name} kernel: {raw_dmesg(h, t)} "
    if style == "console":
        return f"{rfc3339_us(local(h, t))} {h.alias} kernel: {raw_dmesg(h, t)} "
    if style == "journal":
        return f"{short_iso(local(h, t))} {h.name} kernel: "
    return f"{raw_dmesg(h, t)} "
