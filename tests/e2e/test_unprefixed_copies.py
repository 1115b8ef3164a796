"""One fault printed twice by one process: the Python traceback without a prefix, then the NCCL watchdog of the
same process with c10d's `[Rank N]` (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: "[Rank %d] NCCL watchdog
thread terminated with exception: %s", the exception being the CUDA error the traceback raised). The unprefixed
copy is that rank's, not a second suspect: the answer is the rank, with confidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

HINT = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."]


def _log(ranks: list[int]) -> list[str]:
    lines = ["Traceback (most recent call last):", '  File "train.py", line 257, in forward',
             "    emb = torch.exp(exponent)", "RuntimeError: CUDA error: uncorrectable ECC error encountered",
             *HINT, ""]
    for rank in ranks:
        lines += [f"[E ProcessGroupNCCL.cpp:916] [Rank {rank}] NCCL watchdog thread terminated with exception: CUDA "
                  "error: uncorrectable ECC error encountered", *HINT, ""]
    return lines


def _diagnose(tmp_path: Path, lines: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    assert main(["diagnose", str(tmp_path / "train.log"), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert isinstance(rc, dict)
    return rc


def test_an_unprefixed_traceback_and_one_ranks_watchdog_with_its_error_are_that_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = _diagnose(tmp_path, _log([1]), capsys)
    assert (rc["signature"], rc["rank"]) == ("cuda.ecc_uncorrectable", 1), rc["explanation"]
    assert isinstance(rc["confidence"], float) and rc["confidence"] >= 0.7, rc["explanation"]


def test_two_ranks_printing_it_leave_the_unprefixed_copy_unplaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ranks 1 and 3 both carry the error: the traceback could be either's, so it speaks for neither."""
    rc = _diagnose(tmp_path, _log([1, 3]), capsys)
    assert isinstance(rc["confidence"], float) and rc["confidence"] < 0.7, rc["explanation"]
