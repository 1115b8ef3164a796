"""bench/accuracy.py's baseline reads torchrun's output the way torchrun writes it, and --records writes what
calibration needs.

torchrun's prefixes: ``[{role}{local_rank}]:`` is the LOCAL rank (pytorch/pytorch
torch/distributed/elastic/multiprocessing/tail_log.py TailLog.start); the failure table's ``rank`` is the global
rank, keyed by worker.global_rank (torch/distributed/elastic/agent/server/local_elastic_agent.py
_monitor_workers), ``local_rank`` beside it; srun -l labels lines ``%*d: `` (SchedMD/slurm
src/common/write_labelled_message.c).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import get_args

import pytest

from bench import accuracy
from schemas.diagnosis import Verdict
from simulate import SCENARIOS, Knobs, generate


def test_the_reader_takes_role_prefixes_as_local_ranks() -> None:
    log = Path("node001/console.log")
    assert accuracy._reader("[default3]:RuntimeError: CUDA error", log)[0] is None
    assert accuracy._reader("[rank11]:[E1129 10:40:00.1 ProcessGroupNCCL.cpp:630] x", log)[0] == 11
    assert accuracy._reader(" 7: [rank5]: Traceback (most recent call last):", log) == (5, "Traceback (most "
                                                                                        "recent call last):")
    assert accuracy._reader("RuntimeError: boom", Path("node001/rank12.log"))[0] == 12


def test_torchruns_rule_names_the_tables_global_rank(tmp_path: Path) -> None:
    """A multi-node job behind local prefixes: the table of the victim's node names its global rank."""
    for seed in range(40):
        root = tmp_path / str(seed)
        truth = generate("cuda_oom", root, seed, Knobs(world_size=32, max_skew_s=0, local_prefix="default"))
        if truth.rank is not None and truth.rank >= 8:
            break
    call = accuracy.baseline_call(root)
    assert call.rank == truth.rank and call.host == truth.host


def test_hostile_draws_leave_the_plan_and_the_other_knobs_alone() -> None:
    base, _ = accuracy.knobs_for(random.Random(3), 16)
    hostile = accuracy.hostile_knobs(random.Random(5), base)
    assert {f: getattr(hostile, f) for f in ("world_size", "max_skew_s", "missing", "noise")} == {
        f: getattr(base, f) for f in ("world_size", "max_skew_s", "missing", "noise")}
    draws = [accuracy.hostile_knobs(random.Random(s), base) for s in range(40)]
    assert {k.local_prefix for k in draws} == {None, "default", "role", "template", "logdir"}
    assert {k.aliases for k in draws} == {None, "slurm", "aws", "k8s"}


def test_records_are_one_json_line_per_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accuracy, "OUT", tmp_path)
    out = tmp_path / "records.jsonl"
    assert accuracy.main(["--per-kind", "1", "--no-large", "--hostile", "--records", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(SCENARIOS)
    for row in rows:
        assert isinstance(row["right"], bool) and isinstance(row["class_right"], bool)
        assert 0.0 <= row["confidence"] <= 1.0 and row["verdict"] in get_args(Verdict)
        assert set(row["knobs"]) >= set(accuracy.HOSTILE_FIELDS)
