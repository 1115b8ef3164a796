"""MosaicML Composer's launcher re-prints a crashed rank's output between its own markers, and names the first rank
it saw end (issue 22).

Formats from mosaicml/composer composer/cli/launcher.py: `_monitor_processes` logs "Rank {global_rank} crashed
with exit code {returncode}." (logging.basicConfig: "ERROR:composer.cli.launcher:"); `_print_process_exit_status`
prints "Global rank {R} (PID {P}) exited with code {C}", then "----------Begin global rank {R} STDOUT----------",
the rank's output, "----------End global rank {R} STDOUT----------", and the same around STDERR, but not for ranks
ended by SIGKILL or SIGTERM (`_cleanup_processes`: "-process.returncode in (signal.SIGKILL, signal.SIGTERM)").
torch 2.1's lines carry no rank prefix; CUDA's message is c10/cuda/CUDAException.cpp's; the OOM killer's is linux
mm/oom_kill.c's "Out of memory: Killed process %d (%s)".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

LAUNCHER = "ERROR:composer.cli.launcher:"


def _diagnose(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["diagnose", str(root), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert isinstance(rc, dict)
    return rc


def _console(first: int, crashed: int | None, code: int, stderr: list[str]) -> list[str]:
    lines = [f"{LAUNCHER}Rank {first} crashed with exit code {code}.",
             "Waiting up to 30 seconds for all training processes to terminate. Press Ctrl-C to exit immediately."]
    if crashed is not None:
        lines += [f"Global rank {crashed} (PID 66669) exited with code {code}",
                  f"----------Begin global rank {crashed} STDOUT----------", "[batch=120/8000]:",
                  f"----------End global rank {crashed} STDOUT----------",
                  f"----------Begin global rank {crashed} STDERR----------", *stderr,
                  f"----------End global rank {crashed} STDERR----------"]
    return [*lines, f"{LAUNCHER}Global rank {first - first % 8} (PID 63656) exited with code -15"]


def test_a_crashed_ranks_stderr_block_names_its_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stderr = ["Traceback (most recent call last):", '  File "train.py", line 88, in <module>',
              "RuntimeError: CUDA error: uncorrectable ECC error encountered",
              "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
              "might be incorrect."]
    (tmp_path / "node0.log").write_text("\n".join(_console(3, None, -15, [])) + "\n")
    (tmp_path / "node1.log").write_text("\n".join(_console(11, 11, 1, stderr)) + "\n")
    rc = _diagnose(tmp_path, capsys)
    assert rc["signature"] == "cuda.ecc_uncorrectable"
    assert rc["rank"] == 11


def test_a_rank_the_launcher_saw_killed_is_the_one_the_kernel_killed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "node0.log").write_text("\n".join(_console(5, None, -15, [])) + "\n")
    (tmp_path / "node1.log").write_text("\n".join(_console(13, None, -9, [])) + "\n")
    (tmp_path / "dmesg").mkdir()
    (tmp_path / "dmesg" / "gpu-bm-c8-906.log").write_text(
        "[Mon Dec  7 10:15:21 2026] Out of memory: Killed process 73112 (python3) total-vm:812345672kB, "
        "anon-rss:402345676kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1234kB oom_score_adj:0\n")
    rc = _diagnose(tmp_path, capsys)
    assert rc["rank"] == 13
