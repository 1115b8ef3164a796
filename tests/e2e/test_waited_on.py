"""A rank known only by its absence: the ranks that wait on it print, it does not."""

from __future__ import annotations

from pathlib import Path

from scan.engine import default_matcher, diagnose_sources
from sources.files import expand

_WAITING = """\
[rank{r}]: Traceback (most recent call last):
[rank{r}]:   File "/work/train/run_clm.py", line 414, in main
[rank{r}]:     with training_args.main_process_first(desc="dataset map tokenization"):
[rank{r}]:   File "/usr/lib/python3.10/contextlib.py", line 135, in __enter__
[rank{r}]:     return next(self.gen)
[rank{r}]:   File "/venv/lib/python3.10/site-packages/transformers/training_args.py", line 2108, in main_process_first
[rank{r}]:     dist.barrier()
[rank{r}]: RuntimeError: Socket Timeout
"""


def _job(root: Path, rank0: str) -> None:
    root.mkdir()
    (root / "rank0.log").write_text(rank0)
    for r in range(1, 4):
        (root / f"rank{r}.log").write_text(_WAITING.format(r=r))


def test_ranks_parked_in_main_process_first_point_at_the_main_process(tmp_path: Path) -> None:
    """HF Trainer runs the tokenisation on rank 0 while every other rank waits in a barrier: the waiting ranks'
    tracebacks time out, rank 0 printed only its progress. The answer is rank 0, not "no single rank"."""
    _job(tmp_path / "job", "[rank0]: Running tokenizer on dataset:  48%|####8     | 4800/10000 [29:58<32:27]\n")
    d = diagnose_sources(default_matcher(), expand([str(tmp_path / "job")]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.signature == "pytorch.hf_trainer.main_process_first_barrier"
    assert d.root_cause.rank == 0
    assert {r for g in d.collateral for r in g.ranks} == {1, 2, 3}  # every rank that waited, none of them blamed


def test_a_main_process_with_its_own_failure_is_blamed_for_it(tmp_path: Path) -> None:
    """Rank 0 died inside the map (out of host memory): the cause is its own error, the waiting ranks are its
    collateral."""
    _job(tmp_path / "job", "[rank0]: Running tokenizer on dataset:  48%\n"
                           "[rank0]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
                           "(GPU 0; 79.15 GiB total capacity; 76.10 GiB already allocated)\n")
    d = diagnose_sources(default_matcher(), expand([str(tmp_path / "job")]), 2026)
    assert d.root_cause is not None
    assert d.root_cause.rank == 0
    assert d.root_cause.signature is not None and "oom" in d.root_cause.signature


def test_ranks_that_cannot_get_the_nccl_unique_id_point_at_rank_0(tmp_path: Path) -> None:
    """ProcessGroupNCCL's broadcastUniqueNCCLID: rank 0 sets the unique id in the store, the others get it. Their
    gets time out ("[N] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value
    store by key '0', but store->get('0') got error: wait timeout after 600000ms"); rank 0 printed nothing."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.log").write_text("[rank0]: loading shards 7/8\n")
    for r in range(1, 4):
        (job / f"rank{r}.log").write_text(
            f"[rank{r}]: torch.distributed.DistBackendError: [{r}] is setting up NCCL communicator and retrieving "
            f"ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout "
            "after 600000ms, keys: /default_pg/0//cuda//0\n")
    d = diagnose_sources(default_matcher(), expand([str(job)]), 2026)
    assert d.root_cause is not None and d.root_cause.rank == 0, d.root_cause
    assert {r for g in d.collateral for r in g.ranks} == {1, 2, 3}
