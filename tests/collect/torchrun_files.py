"""A torchrun run on one node as TorchElastic leaves it, in the upstream formats (collect/torchrun.py cites them):
node gpu-b07 is node rank 1 of 2 with 4 workers (global ranks 4-7); attempt_0 was restarted, attempt_1 failed
when rank 6 (local 2) ran out of GPU memory and its @record entry point wrote its error file."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

HOST, RUN = "gpu-b07", "77123_k2j4x9q1"
VICTIM, VICTIM_LOCAL = 6, 2
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of "
       "79.14 GiB of which 1.02 GiB is free. Of the allocated memory 75.31 GiB is allocated by PyTorch")
STACK = ('Traceback (most recent call last):\n  File "/workspace/train.py", line 88, in <module>\n    main()\n'
         '  File "/workspace/train.py", line 61, in main\n    loss = model(batch).loss\n' + OOM + "\n")


def error_file() -> dict[str, object]:
    """ErrorHandler.record_exception's document."""
    return {"message": {"message": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
                        "extraInfo": {"py_callstack": STACK, "timestamp": "1796292842"}}}


def agent_log(log_dir: Path) -> str:
    """torchrun's own stderr: the rendezvous result of the restart, then ChildFailedError's failure table."""
    error_path = log_dir / RUN / "attempt_1" / str(VICTIM_LOCAL) / "error.json"
    return "\n".join([
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:",
        "  restart_count=1", "  master_addr=gpu-b06", "  master_port=29500", "  group_rank=1",
        "  group_world_size=2", "  local_ranks=[0, 1, 2, 3]", "  role_ranks=[4, 5, 6, 7]",
        "  global_ranks=[4, 5, 6, 7]", "  role_world_sizes=[8, 8, 8, 8]", "  global_world_sizes=[8, 8, 8, 8]", "",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60, "train.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
        "Root Cause (first observed failure):", "[0]:",
        "  time      : 2026-12-03_10:14:02", f"  host      : {HOST}",
        f"  rank      : {VICTIM} (local_rank: {VICTIM_LOCAL})", "  exitcode  : 1 (pid: 48213)",
        f"  error_file: {error_path}", "  traceback : Traceback (most recent call last):", "=" * 60, ""])


def dump(rank: int) -> bytes:
    """A Flight Recorder dump as pickled by the watchdog (TORCH_NCCL_DUMP_ON_TIMEOUT): builtins only."""
    entries = [{"record_id": i, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": i,
                "p2p_seq_id": 0, "op_id": i, "profiling_name": "nccl:all_reduce", "time_created_ns": 10 ** 9 * i,
                "input_sizes": [[1024]], "output_sizes": [[1024]], "state": "completed", "is_p2p": False}
               for i in range(1, 4)]
    return pickle.dumps({"version": "2.4", "pg_config": {}, "pg_status": {"0": {
        "last_enqueued_collective": 3, "last_started_collective": 3, "last_completed_collective": 3}},
        "entries": entries}, protocol=4)


def make(root: Path) -> tuple[Path, Path, str]:
    """(the --log-dir, torchrun's agent log, the Flight Recorder prefix)."""
    log_dir = root / "logs"
    for attempt in (0, 1):
        for local in range(4):
            folder = log_dir / RUN / f"attempt_{attempt}" / str(local)
            folder.mkdir(parents=True)
            rank = 4 + local
            (folder / "stdout.log").write_text(f"[attempt {attempt}] rank {rank} step 10 loss 2.31\n")
            (folder / "stderr.log").write_text(
                f"rank {rank}: attempt {attempt} warming up\n" + (STACK if attempt and rank == VICTIM else ""))
            if attempt == 1 and local == VICTIM_LOCAL:
                (folder / "error.json").write_text(json.dumps(error_file()))
    agent = root / "torchrun.log"
    agent.write_text(agent_log(log_dir))
    prefix = str(root / "fr" / "nccl_trace_rank_")
    (root / "fr").mkdir()
    for rank in (0, 4, 5, 6, 7):  # rank 0's dump is another node's, copied onto shared storage
        Path(prefix + str(rank)).write_bytes(dump(rank))
    stale = Path(prefix + "7")  # left by an earlier job on this node
    os.utime(stale, (1_600_000_000, 1_600_000_000))
    return log_dir, agent, prefix
