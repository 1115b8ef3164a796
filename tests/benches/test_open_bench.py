"""bench.open reads what ../shared/corpus/score.py prints, for firstfault and for torchrun's rule, and puts both
in one table: run here on two labelled logs written for this test, through the real score.py and CLI."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from bench.open import _score, generator_scorer, markdown, parse_score
from tests.corpus import corpus_dir

# A rank's CUDA OOM among watchdog timeouts (PyTorch's formats), and a node's OOM kill (the kernel's format).
LOGS = {
    "oom": ("cuda_oom", 3, [
        "[rank0]:[E1129 10:14:20.100000 4242 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
        "for 600100 milliseconds before timing out.",
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
        "capacity of 79.15 GiB of which 1.02 GiB is free.",
    ]),
    "killed": ("host_oom_killer", None, [
        "[Sun Nov 29 10:14:45 2026] Out of memory: Killed process 4242 (python) total-vm:1000kB, anon-rss:900kB",
    ]),
}


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    rows = []
    for name, (cls, rank, lines) in LOGS.items():
        (tmp_path / f"{name}.log").write_text("\n".join(lines) + "\n")
        rows.append({"id": name, "failure_class": cls, "initiating": {"rank": rank} if rank is not None else {},
                     "confidence": "high"})
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_both_diagnosers_scores_are_read_and_tabled(labels: Path) -> None:
    corpus = corpus_dir()
    exe = shutil.which("firstfault") or str(Path(sys.executable).with_name("firstfault"))
    if corpus is None or not Path(exe).exists():
        pytest.skip("needs ../shared/corpus/score.py and the firstfault console script")
    ours = _score(labels, "firstfault", exe, corpus / "score.py")
    base = _score(labels, "baseline", exe, corpus / "score.py")
    assert (ours["n"], ours["rank_n"], ours["crashes"]) == (2, 1, 0)
    assert ours["rank"] == 1 and "high" in ours  # rank 3's OOM, with a calibration line
    assert base["n"] == 2 and "high" not in base  # score.py prints no calibration for the baseline
    table = markdown([{"set": "two logs", "ours": ours, "baseline": base}],
                     [{"set": "plain", "n": 28, "ff": 100, "base": 46, "cls": 100}], "firstfault")
    assert f"| two logs | 2 | {ours['cls']}/2 = " in table and "| plain | 28 | 100% | 46% | 100% |" in table


def test_a_summary_that_is_not_there_is_an_error_not_a_zero() -> None:
    with pytest.raises(RuntimeError, match="no summary"):
        parse_score("Traceback (most recent call last):\n  ...\n")


def test_a_generators_own_classes_are_scored_with_its_additions(tmp_path: Path) -> None:
    """bench/independent6 labels disk-full checkpoints `checkpoint_write_failed_disk_full`, a class the corpus map
    lacks: its class_map_additions.json says which catalog words name it, as a field set's does in bench.corpus."""
    corpus = corpus_dir()
    if corpus is None:
        pytest.skip("../shared/corpus is not on this machine")
    scorer = generator_scorer("bench.independent6", corpus, tmp_path)
    merged = json.loads((scorer.parent / "class_map.json").read_text())
    assert "enospc" in merged["checkpoint_write_failed_disk_full"]
    assert merged.items() >= json.loads((corpus / "class_map.json").read_text()).items()
    assert generator_scorer("bench.independent", corpus, tmp_path) == corpus / "score.py"  # no additions: as is
