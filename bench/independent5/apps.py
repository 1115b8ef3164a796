"""What each framework prints while the job is healthy: start-up, rendezvous, step lines. Styles `app|<fmt>|
<LEVEL>|<where>` are stamped by render.py with the framework's own formatter (DeepSpeed, vLLM, HF, Megatron)."""

from __future__ import annotations

from .story import Job
from .texts import FUTURE_WARNING, Line, nccl_init, store_retry

MODEL = {"deepspeed_pdsh": "gpt-13b", "mpirun_plain": "gpt3-175b-tp8", "torchx_lightning": "vit-h14",
         "accelerate_srun": "llama-3.1-8b-sft", "vllm_serve": "meta-llama/Llama-3.1-405B-Instruct-FP8"}


def _ds(level: str, where: str, text: str) -> Line:
    return (f"app|ds|{level}|{where}", text)


def rank_startup(job: Job, r: int) -> list[Line]:
    """Every rank's own start-up lines for the job's framework."""
    lay, w = job.layout, job.world
    out: list[Line] = []
    if r and job.rng.random() < 0.3:
        out.append(store_retry(job.hosts[job.rank_host[0]].name, 29500))
    if lay == "deepspeed_pdsh":
        # deepspeed/comm/comm.py init_distributed (`cdb=None`, `Initializing TorchBackend in DeepSpeed with
        # backend nccl` on rank 0 through log_dist)
        out.append(_ds("INFO", "comm.py:658:init_distributed", "cdb=None"))
        if r == 0:
            out.append(_ds("INFO", "comm.py:689:init_distributed", "Initializing TorchBackend in DeepSpeed with "
                           "backend nccl"))
    elif lay == "torchx_lightning":
        # lightning_fabric/utilities/distributed.py _init_dist_connection (every rank); pytorch/accelerators/
        # cuda.py `LOCAL_RANK: %d - CUDA_VISIBLE_DEVICES: [...]` (every rank); rank-zero-only banners
        out.append(("err", f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{w}"))
        if r == 0:
            out += [("err", "-" * 100), ("err", "distributed_backend=nccl"),
                    ("err", f"All distributed processes registered. Starting with {w} processes"), ("err", "-" * 100),
                    ("err", "")]
        devs = ",".join(str(i) for i in range(job.nproc))
        out.append(("out", f"LOCAL_RANK: {job.local[r]} - CUDA_VISIBLE_DEVICES: [{devs}]"))
    elif lay == "accelerate_srun":
        # accelerate/state.py PartialState.__repr__, logged by the HF example with main_process_only=False
        out += [("app|hf|INFO|__main__", "Distributed environment: MULTI_GPU  Backend: nccl"),
                ("err", f"Num processes: {w}"), ("err", f"Process index: {r}"),
                ("err", f"Local process index: {job.local[r]}"), ("err", f"Device: cuda:{job.local[r]}"),
                ("err", ""), ("err", "Mixed precision type: bf16"), ("err", "")]
    elif lay == "mpirun_plain" and r == 0:
        # megatron/training/arguments.py _print_args / initialize.py _initialize_distributed (rank 0 prints)
        out += [("out", f"using world size: {w}, data-parallel size: {max(1, w // 8)}, context-parallel size: 1, "
                 f"tensor-model-parallel size: {min(8, w)}, pipeline-model-parallel size: 1"),
                ("out", "> initializing torch distributed ..."),
                ("out", "> initialized tensor model parallel with size 8")]
    if job.nccl_debug:
        h = job.host_of(r)
        out += nccl_init(r, w, job.local[r], h.pci_buses[job.local[r]], "0x9c1e3a5f07b2d4e8", job.ib,
                         job.nccl_version)
    if job.rng.random() < 0.5:
        out += FUTURE_WARNING
    return out


def step_line(job: Job, step: int, loss: float, r: int) -> Line | None:
    """One training step as the framework reports it, from the rank that reports it (None: this rank does not)."""
    lay, last = job.layout, job.world - 1
    if lay == "deepspeed_pdsh" and r == 0:
        # deepspeed/runtime/engine.py _report_progress via log_dist(ranks=[0])
        return _ds("INFO", "logging.py:128:log_dist", f"[Rank 0] step={step}, skipped=0, lr=[0.00029997], "
                   "mom=[(0.9, 0.95)]")
    if lay == "mpirun_plain" and r == last:
        # megatron/training/training.py training_log (printed by the last rank: print_rank_last)
        return ("app|megatron|INFO|", f" iteration {step:8d}/  500000 | consumed samples: {step * 1536:12d} | "
                f"elapsed time per iteration (ms): {6100 + (step * 37) % 400:.1f} | learning rate: 1.499E-04 | "
                f"global batch size:  1536 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 0.873 | number of "
                "skipped iterations:   0 | number of nan iterations:   0 |")
    if lay == "torchx_lightning" and r == 0:
        # lightning's TQDMProgressBar: carriage-returned bars, one kept per refresh when not a TTY
        return ("err", f"Epoch 3:  {step % 100:2d}%|##        | {step % 1000}/1000 [{step // 60:02d}:{step % 60:02d}"
                f"<14:49,  1.12it/s, v_num=0, train_loss={loss:.3f}]")
    if lay == "accelerate_srun" and r == 0:
        # transformers Trainer.log: the logs dict printed on the main process
        return ("out", f"{{'loss': {loss:.4f}, 'grad_norm': 0.8125, 'learning_rate': 1.9e-05, "
                f"'epoch': {step / 2000:.2f}}}")
    return None


# --- vLLM (vllm/entrypoints/openai/api_server.py, v1/engine/core.py, distributed/parallel_state.py) ----------

def vllm_server_start(job: Job) -> list[Line]:
    tp, pp = min(8, job.world), max(1, job.world // 8)
    return [("app|vllm|INFO|__init__.py:239", "Automatically detected platform cuda."),
            ("app|vllm|INFO|api_server.py:1090", "vLLM API server version 0.8.5"),
            ("app|vllm|INFO|core.py:61", f"Initializing a V1 LLM engine (v0.8.5) with config: "
             f"model='{MODEL['vllm_serve']}', speculative_config=None, tokenizer='{MODEL['vllm_serve']}', "
             f"dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size={tp}, pipeline_parallel_size={pp}, "
             f"disable_custom_all_reduce=False, quantization=fp8, enforce_eager=False, seed=0"),
            ("app|vllm|INFO|shm_broadcast.py:266", "vLLM message queue communication handle: "
             "Handle(local_reader_ranks=[0, 1, 2, 3, 4, 5, 6, 7], buffer_handle=(8, 4194304, 6, 'psm_5c1e2a9f'), "
             "local_subscribe_addr='ipc:///tmp/8d1f6c2e', remote_subscribe_addr=None, remote_addr_ipv6=False)")]


def vllm_worker_start(job: Job, r: int) -> list[Line]:
    tp = min(8, job.world)
    return [("app|vllm|INFO|parallel_state.py:959", f"rank {r} in world size {job.world} is assigned as DP rank "
             f"0, PP rank {r // tp}, TP rank {r % tp}"),
            ("app|vllm|INFO|gpu_model_runner.py:1329", "Starting to load model "
             f"{MODEL['vllm_serve']}..."),
            ("app|vllm|INFO|gpu_model_runner.py:1347", "Model loading took 57.42 GiB and 131.8 seconds")]


def vllm_metrics(step: int) -> Line:
    """vllm/v1/metrics/loggers.py LoggingStatLogger.log."""
    return ("app|vllm|INFO|loggers.py:116", f"Engine 000: Avg prompt throughput: {1200 + step % 300:.1f} tokens/s, "
            f"Avg generation throughput: {410 + step % 90:.1f} tokens/s, Running: {8 + step % 9} reqs, Waiting: 0 "
            f"reqs, GPU KV cache usage: {20 + step % 30:.1f}%, Prefix cache hit rate: 61.3%")
