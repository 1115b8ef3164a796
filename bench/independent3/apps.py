"""What the training program itself prints: start-up, progress, checkpoints, its traceback frames.

One class per framework; each cites the upstream file its lines follow.
Streams: "out" (stdout), "err" (stderr), "nlog" (NeMo's logger: stderr and the per-rank NeMo log file).
"""

from __future__ import annotations

from . import lines, topo

PY = "/usr/local/lib/python3.10/dist-packages"


def make(name: str, st) -> App:
    return {
        "lightning": Lightning,
        "nemo": NeMo,
        "megatron": Megatron,
        "deepspeed": DeepSpeed,
        "fsdp": Fsdp,
        "accelerate": Accelerate,
    }[name](st)


class App:
    log_rank_last = False
    script = "train.py"

    def __init__(self, st):
        self.st = st
        self.rng = st.rng
        self.every = 1
        self.ckpt_every = self.rng.choice([500, 1000, 2000])

    # hooks
    def startup(self) -> None: ...

    def step_line(self, r: int, t: float, it: int, total: int) -> list[tuple[str, str]]:
        return []

    def progress(self, t_end: float) -> None:
        st = self.st
        n_iters = max(2, int((t_end - st.t_train) / st.iter_s))
        total = n_iters * self.rng.randint(3, 30)
        self.every = max(1, n_iters // self.rng.randint(25, 90))
        self.total = total
        r = st.world - 1 if self.log_rank_last else 0
        for it in range(self.every, n_iters, self.every):
            t = st.t_train + it * st.iter_s + self.rng.uniform(0, 0.05)
            for stream, text in self.step_line(r, t, it, total):
                st.say(r, t, text, stream)
        self.last_it = n_iters

    def on_sigterm(self, r: int, t: float) -> None: ...

    def frames(self, r: int, where: str) -> list[tuple[str, int, str, str]]:
        return [
            (f"/workspace/{self.script}", 241, "<module>", "main()"),
            (f"/workspace/{self.script}", 219, "main", "train(cfg, model, optim, loader)"),
            (f"/workspace/{self.script}", 164, "train", "loss = train_step(model, batch)"),
        ]

    def ckpt_start(self, r: int, t: float, it: int) -> str:
        return f"saving checkpoint at iteration {it} to /ckpt/run/iter_{it:07d}"


def _step_frames(where: str) -> list[tuple[str, int, str, str]]:
    """The innermost frames for where an exception is raised (torch/nn/modules/module.py, dataloader.py)."""
    if where == "data":
        return [
            (f"{PY}/torch/utils/data/dataloader.py", 631, "__next__", "data = self._next_data()"),
            (f"{PY}/torch/utils/data/dataloader.py", 1329, "_next_data", "idx, data = self._get_data()"),
            (f"{PY}/torch/utils/data/dataloader.py", 1295, "_get_data", "success, data = self._try_get_data()"),
            (
                f"{PY}/torch/utils/data/dataloader.py",
                1146,
                "_try_get_data",
                "raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e",
            ),
        ]
    if where == "init":
        return [(f"{PY}/torch/cuda/__init__.py", 478, "set_device", "torch._C._cuda_setDevice(device)")]
    return [
        (f"{PY}/torch/nn/modules/module.py", 1736, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{PY}/torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)"),
        ("/workspace/model.py", 88, "forward", "attn = torch.softmax(scores.float(), dim=-1).type_as(q)"),
    ]


class Lightning(App):
    """lightning/pytorch: trainer/connectors/accelerator_connector.py (GPU available ...),
    lightning_fabric/strategies/ddp + utilities/distributed.py _init_dist_connection (Initializing distributed),
    lightning_fabric/utilities/seed.py + rank_zero.rank_prefixed_message ([rank: N] Seed set to),
    accelerators/cuda.py (LOCAL_RANK: N - CUDA_VISIBLE_DEVICES), callbacks/progress/tqdm_progress.py,
    trainer/connectors/signal_connector.py (Received SIGTERM, logged with the *local* rank)."""

    def startup(self) -> None:
        st = self.st
        w = st.world
        for r in range(w):
            t = st.t0 + 8 + self.rng.uniform(0, 6)
            if r == 0:
                for m in [
                    "GPU available: True (cuda), used: True",
                    "TPU available: False, using: 0 TPU cores",
                    "HPU available: False, using: 0 HPUs",
                ]:
                    st.say(r, t - 1, m)
            st.say(
                r,
                t,
                f"[rank: {r}] Seed set to {self.rng.choice([42, 1234, 3407])}"
                if r == 0
                else f"[rank: {r}] Seed set to 42",
            )
            st.say(r, t + 0.5, f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{w}")
            if r == 0:
                bar = "-" * 100
                st.say(
                    r,
                    t + 9,
                    f"{bar}\ndistributed_backend=nccl\nAll distributed processes registered. "
                    f"Starting with {w} processes\n{bar}\n",
                )
            vis = ",".join(str(i) for i in range(st.spec.nproc))
            st.say(r, t + 12, f"LOCAL_RANK: {st.local(r)} - CUDA_VISIBLE_DEVICES: [{vis}]")
            if r == 0:
                st.say(
                    r,
                    t + 14,
                    "\n".join(
                        [
                            "  | Name    | Type             | Params | Mode ",
                            "-----------------------------------------------------",
                            "0 | model   | GPT              | 1.3 B  | train",
                            "1 | loss_fn | CrossEntropyLoss | 0      | train",
                            "-----------------------------------------------------",
                            "1.3 B     Trainable params",
                            "0         Non-trainable params",
                            "1.3 B     Total params",
                            "5,261.619 Total estimated model params size (MB)",
                        ]
                    ),
                    "out",
                )

    def step_line(self, r, t, it, total):
        pct = int(100 * it / total)
        el = int(it * self.st.iter_s)
        return [
            (
                "err",
                f"Epoch 0:  {pct:2d}%|{'█' * (pct // 10):<10}| {it}/{total} [{el // 60:02d}:{el % 60:02d}<?, "
                f"{1 / self.st.iter_s:.2f}it/s, v_num=3, train_loss={2.1 + 3.0 / (1 + it / 300):.3f}]",
            )
        ]

    def on_sigterm(self, r, t):
        # signal_connector.py _sigterm_notifier_fn: rank_prefixed_message(f"Received SIGTERM: {signum}",
        # self.trainer.local_rank) -- the *local* rank, checked against the Lightning source
        self.st.say(r, t + 0.01, f"[rank: {self.st.local(r)}] Received SIGTERM: 15")

    def frames(self, r, where):
        return [
            ("/workspace/train.py", 97, "<module>", "trainer.fit(model, datamodule=dm)"),
            (f"{PY}/lightning/pytorch/trainer/trainer.py", 538, "fit", "call._call_and_handle_interrupt("),
            (
                f"{PY}/lightning/pytorch/trainer/call.py",
                46,
                "_call_and_handle_interrupt",
                "return trainer.strategy.launcher.launch(trainer_fn, *args, trainer=trainer, **kwargs)",
            ),
            (f"{PY}/lightning/pytorch/loops/fit_loop.py", 205, "run", "self.advance()"),
            (f"{PY}/lightning/pytorch/loops/training_epoch_loop.py", 140, "run", "self.advance(data_fetcher)"),
            *_step_frames(where),
        ]


class NeMo(App):
    """NVIDIA/NeMo nemo/utils/formatters/base.py BaseNeMoFormatter
    `[NeMo %(levelname)1.1s %(asctime)s %(module)s:%(lineno)d]`, nemo/utils/exp_manager.py (Experiments will be
    logged at; nemo_log_globalrank-R_localrank-L.txt; nemo_error_log.txt),
    nemo/collections/nlp/modules/common/megatron/megatron_init.py (Rank N has data parallel group)."""

    def __init__(self, st):
        super().__init__(st)
        self.name = self.rng.choice(["megatron_gpt", "megatron_llama", "nemotron_15b"])
        self.version = topo.nemo_dir_ts(st.hosts[0].clock(st.t0))
        self.log_dir = f"/results/{self.name}/{self.version}"

    def nlog(self, r, t, lvl, where, msg):
        h = self.st.host(r)
        self.st.say(r, t, f"[NeMo {lvl} {topo.iso(h.clock(t))} {where}] {msg}", "nlog")

    def startup(self):
        st = self.st
        w = st.world
        tp = min(st.spec.nproc, self.rng.choice([2, 4, 8]))
        for r in range(w):
            t = st.t0 + 20 + self.rng.uniform(0, 8)
            st.say(r, t, f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{w}")
            self.nlog(r, t + 3, "I", "exp_manager:396", f"Experiments will be logged at {self.log_dir}")
            self.nlog(r, t + 3.1, "I", "exp_manager:856", "TensorboardLogger has been set up")
            dp = [x for x in range(w) if x % tp == r % tp]
            self.nlog(r, t + 4, "I", "megatron_init:263", f"Rank {r} has data parallel group : {dp[:8]}")
            self.nlog(
                r,
                t + 4.1,
                "I",
                "megatron_init:269",
                f"Rank {r} has combined group of data parallel and context parallel : {dp[:8]}",
            )
            self.nlog(
                r,
                t + 4.2,
                "I",
                "megatron_init:287",
                f"Rank {r} has model parallel group: {list(range(r - r % tp, r - r % tp + tp))}",
            )
            self.nlog(
                r,
                t + 5,
                "W",
                "nemo_logging:349",
                f"{PY}/megatron/core/tensor_parallel/layers.py:289: "
                "FutureWarning: `torch.cuda.amp.custom_fwd(args...)` is "
                "deprecated.",
            )

    def step_line(self, r, t, it, total):
        el = int(it * self.st.iter_s)
        return [
            (
                "err",
                f"Epoch 0: :  {int(100 * it / total):2d}%|▏ | {it}/{total} [{el // 3600}:{el // 60 % 60:02d}:"
                f"{el % 60:02d}<?, reduced_train_loss={1.9 + 4.0 / (1 + it / 200):.3f}, global_step={it}.0, "
                f"consumed_samples={it * 512}.0, train_step_timing in s={self.st.iter_s:.2f}]",
            )
        ]

    def frames(self, r, where):
        return [
            ("/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py", 42, "main", "trainer.fit(model)"),
            (
                "/usr/local/lib/python3.10/dist-packages/lightning/pytorch/trainer/trainer.py",
                538,
                "fit",
                "call._call_and_handle_interrupt(",
            ),
            (
                "/opt/NeMo/nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py",
                683,
                "training_step",
                "loss_mean = self.fwd_bwd_step(dataloader_iter, False)",
            ),
            (
                "/opt/megatron-lm/megatron/core/pipeline_parallel/schedules.py",
                454,
                "forward_backward_no_pipelining",
                "output_tensor, num_tokens = forward_step(",
            ),
            *_step_frames(where),
        ]

    def ckpt_start(self, r, t, it):
        return (
            f"[NeMo I {topo.iso(self.st.host(r).clock(t))} nlp_overrides:431] Saving checkpoint: "
            f"{self.log_dir}/checkpoints/{self.name}--val_loss=2.31-step={it}-consumed_samples={it * 512}.0.ckpt"
        )


class Megatron(App):
    """NVIDIA/Megatron-LM megatron/training/training.py training_log (print_rank_last), print_datetime,
    megatron/training/checkpointing.py save_checkpoint (saving / successfully saved), initialize.py."""

    log_rank_last = True
    script = "pretrain_gpt.py"

    def startup(self):
        st = self.st
        t = st.t0 + 15
        st.say(
            0,
            t,
            f"using world size: {st.world}, data-parallel size: {max(1, st.world // 8)}, context-parallel size: 1, "
            "tensor-model-parallel "
            f"size: {min(8, st.spec.nproc)}, pipeline-model-parallel size: 1 ",
            "out",
        )
        st.say(0, t + 1, "> initializing torch distributed ...", "out")
        st.say(0, t + 20, f"> initialized tensor model parallel with size {min(8, st.spec.nproc)}", "out")
        st.say(
            0,
            t + 60,
            f"[after model, optimizer, and learning rate scheduler are built] datetime: "
            f"{topo.iso(st.host(0).clock(t + 60))} ",
            "out",
        )
        st.say(0, t + 70, "training ...", "out")
        for r in range(st.world):
            if self.rng.random() < 0.5:
                st.say(
                    r,
                    t + 2,
                    f"{PY}/megatron/core/tensor_parallel/layers.py:289: FutureWarning: "
                    "`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                    "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.\n  @custom_fwd",
                )

    def step_line(self, r, t, it, total):
        ts = topo.iso(self.st.host(r).clock(t))
        lines_ = [
            (
                "out",
                f" [{ts}] iteration {it:>8}/{total:>8} | consumed samples: {it * 512:>12} | elapsed time per "
                f"iteration (ms): {self.st.iter_s * 1000:.1f} | throughput per GPU (TFLOP/s/GPU): "
                f"{380 + (it % 37):.1f} | learning rate: {1.5e-4:.6E} | global batch size:   512 | lm loss: "
                f"{2.0 + 5.0 / (1 + it / 400):.6E} | loss scale: 1.0 | grad norm: {0.3 + (it % 11) / 20:.3f} | "
                f"number of skipped iterations:   0 | number of nan iterations:   0 |",
            )
        ]
        return lines_

    def ckpt_start(self, r, t, it):
        return f"saving checkpoint at iteration {it:>7} to /lustre/ckpt/gpt in torch_dist format"

    def frames(self, r, where):
        return [
            ("/workspace/megatron-lm/pretrain_gpt.py", 296, "<module>", "pretrain("),
            (
                "/workspace/megatron-lm/megatron/training/training.py",
                355,
                "pretrain",
                "iteration, num_floating_point_operations_so_far = train(",
            ),
            ("/workspace/megatron-lm/megatron/training/training.py", 1245, "train", "train_step(forward_step_func,"),
            (
                "/workspace/megatron-lm/megatron/training/training.py",
                735,
                "train_step",
                "losses_reduced = forward_backward_func(",
            ),
            *_step_frames(where),
        ]


class DeepSpeed(App):
    """deepspeedai/DeepSpeed deepspeed/utils/logging.py
    (`[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s]`),
    comm/comm.py init_distributed, runtime/engine.py (step=, Saving model checkpoint), utils/timer.py ThroughputTimer,
    runtime/checkpoint_engine/torch_checkpoint_engine.py."""

    script = "train_ds.py"

    def ds(self, r, t, lvl, where, msg, stream="out"):
        self.st.say(r, t, f"[{topo.iso_ms(self.st.host(r).clock(t))}] [{lvl}] [{where}] {msg}", stream)

    def startup(self):
        st = self.st
        for r in range(st.world):
            t = st.t0 + 12 + self.rng.uniform(0, 3)
            self.ds(
                r, t, "INFO", "real_accelerator.py:203:get_accelerator", "Setting ds_accelerator to cuda (auto detect)"
            )
            self.ds(r, t + 4, "INFO", "comm.py:652:init_distributed", "cdb=None")
            if r == 0:
                self.ds(
                    r,
                    t + 4.1,
                    "INFO",
                    "comm.py:683:init_distributed",
                    "Initializing TorchBackend in DeepSpeed with backend nccl",
                )
                self.ds(
                    r,
                    t + 30,
                    "INFO",
                    "logging.py:128:log_dist",
                    "[Rank 0] DeepSpeed info: version=0.15.4, git-hash=unknown, git-branch=unknown",
                )
                self.ds(r, t + 31, "INFO", "logging.py:128:log_dist", "[Rank 0] Creating ZeRO stage 3 optimizer")

    def step_line(self, r, t, it, total):
        ts = topo.iso_ms(self.st.host(r).clock(t))
        return [
            (
                "out",
                f"[{ts}] [INFO] [logging.py:128:log_dist] [Rank 0] step={it}, skipped=0, lr=[0.0001], "
                "mom=[(0.9, 0.95)]",
            ),
            (
                "out",
                f"[{ts}] [INFO] [timer.py:264:stop] epoch=0/micro_step={it * 4}/global_step={it}, "
                f"RunningAvgSamplesPerSec={180 + it % 9:.3f}, CurrSamplesPerSec={178 + it % 13:.3f}, "
                "MemAllocated=21.34GB, MaxMemAllocated=43.1GB",
            ),
        ]

    def ckpt_start(self, r, t, it):
        return (
            f"[{topo.iso_ms(self.st.host(r).clock(t))}] [INFO] [logging.py:128:log_dist] [Rank 0] Saving model "
            f"checkpoint: /fsx/ckpt/global_step{it}/zero_pp_rank_0_mp_rank_00_model_states.pt"
        )

    def frames(self, r, where):
        return [
            (f"/workspace/{self.script}", 188, "<module>", "main()"),
            (f"/workspace/{self.script}", 161, "main", "loss = engine(batch)"),
            (f"{PY}/deepspeed/utils/nvtx.py", 18, "wrapped_fn", "ret_val = func(*args, **kwargs)"),
            (f"{PY}/deepspeed/runtime/engine.py", 1899, "forward", "loss = self.module(*inputs, **kwargs)"),
            *_step_frames(where),
        ]


class Fsdp(App):
    """A plain PyTorch FSDP training script under torchrun (its own prints); torch/distributed/checkpoint for saves."""

    script = "fsdp_train.py"

    def startup(self):
        st = self.st
        for r in range(st.world):
            t = st.t0 + 6 + self.rng.uniform(0, 4)
            st.say(
                r,
                t,
                f"[rank {r}] world_size={st.world} local_rank={st.local(r)} device=cuda:{st.local(r)} "
                f"TORCHELASTIC_RESTART_COUNT={st.attempt}",
                "out",
            )
        st.say(0, st.t0 + 40, "FSDP wrapped model: 7.24B params, sharding=FULL_SHARD, mixed_precision=bf16", "out")

    def step_line(self, r, t, it, total):
        return [
            (
                "out",
                f"step {it:6d} | loss {2.0 + 4.0 / (1 + it / 250):.4f} | lr 3.00e-04 | "
                f"{self.st.iter_s:.2f} s/it | mem 61.2 GiB",
            )
        ]

    def ckpt_start(self, r, t, it):
        return f"saving checkpoint step_{it} to /fsx/ckpt/step_{it} (torch.distributed.checkpoint)"


class Accelerate(App):
    """huggingface/accelerate examples + transformers Trainer: `%(asctime)s - %(levelname)s - %(name)s - %(message)s`
    with datefmt %m/%d/%Y %H:%M:%S; accelerate/accelerator.py save_state; Trainer's `{'loss': ...}` log dicts."""

    script = "run_clm_no_trainer.py"

    def alog(self, r, t, name, msg):
        d = topo.utc(self.st.host(r).clock(t))
        self.st.say(r, t, f"{d:%m/%d/%Y %H:%M:%S} - INFO - {name} - {msg}")

    def startup(self):
        st = self.st
        for r in range(st.world):
            t = st.t0 + 10 + self.rng.uniform(0, 3)
            self.alog(
                r,
                t,
                "__main__",
                f"Distributed environment: FSDP  Backend: nccl\nNum processes: {st.world}\n"
                f"Process index: {r}\nLocal process index: {st.local(r)}\n"
                f"Device: cuda:{st.local(r)}\n\nMixed precision type: bf16\n",
            )
        self.alog(0, st.t0 + 60, "__main__", "***** Running training *****")
        self.alog(0, st.t0 + 60.1, "__main__", "  Num examples = 2400512")

    def step_line(self, r, t, it, total):
        return [
            (
                "out",
                f"{{'loss': {2.0 + 4.0 / (1 + it / 250):.4f}, 'grad_norm': {0.5 + (it % 7) / 10:.4f}, "
                f"'learning_rate': 1.8e-05, 'epoch': {it / total:.2f}}}",
            )
        ]

    def ckpt_start(self, r, t, it):
        d = topo.utc(self.st.host(r).clock(t))
        return f"{d:%m/%d/%Y %H:%M:%S} - INFO - accelerate.accelerator - Saving current state to /ckpt/step_{it}"

    def frames(self, r, where):
        return [
            (f"/app/{self.script}", 702, "<module>", "main()"),
            (f"/app/{self.script}", 611, "main", "outputs = model(**batch)"),
            (f"{PY}/accelerate/utils/operations.py", 820, "forward", "return model_forward(*args, **kwargs)"),
            *_step_frames(where),
        ]


__all__ = ["App", "lines", "make"]
