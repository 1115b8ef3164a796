"""What a catch-all answer's line said is in its title, and a CUDA call NCCL makes is classed by its error, not
by the file that made it.

- NCCL prints every failed CUDA runtime/driver call as `<host>:<pid>:<tid> [<dev>] <file>:<line> NCCL WARN Cuda
  failure '<cudaGetErrorString>'` (CUDACHECK / CUCHECK, NVIDIA/nccl src/include/checks.h). In v2.18
  (src/transport/nvls.cc, ncclNvlsInit) the first calls in nvls.cc are cuCtxGetDevice and cudaDriverGetVersion: a
  process whose CUDA cannot initialise (error 3, "initialization error") fails there, which is no NVLS fault.
- A Python exception no entry knows, NCCL's `Cuda failure` with a text no entry knows, PyTorch's `CUDA error:
  <text>`: the entry names the kind of line; the line names the error, and the title now says it first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

_INIT = "NCCL WARN Cuda failure 'initialization error'"


def _nccl(host: str, pid: int, dev: int, where: str, said: str) -> str:
    return f"{host}:{pid}:{pid + 90} [{dev}] {where} {said}"


def test_a_cuda_context_that_cannot_start_is_not_an_nvls_fault(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # two nodes; every process of gpu-b2 fails its first CUDA calls, gpu-b1 sets up normally
    good = [_nccl("gpu-b1", 4100 + d, d, "NCCL INFO", "NVLS multicast support is not available on dev " + str(d))
            for d in range(4)]
    bad = []
    for d in range(4):
        bad += [_nccl("gpu-b2", 5200 + d, d, "misc/cudawrap.cc:33", _INIT),
                _nccl("gpu-b2", 5200 + d, d, "transport/nvls.cc:245", _INIT),
                _nccl("gpu-b2", 5200 + d, d, "NCCL INFO init.cc:872", "-> 1")]
    (tmp_path / "gpu-b1.log").write_text("\n".join(good) + "\n")
    (tmp_path / "gpu-b2.log").write_text("\n".join(bad) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert (rc["signature"], rc["host"]) == ("cuda.initialization_error", "gpu-b2")


def test_an_nvls_setup_error_is_still_nvls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # cuMulticastCreate refusing the fabric (invalid value) is what the file-keyed reading is for
    lines = [_nccl("gpu-b2", 5200 + d, d, "transport/nvls.cc:76", "NCCL WARN Cuda failure 1 'invalid argument'")
             for d in range(4)]
    (tmp_path / "gpu-b2.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "nccl.nvls.multicast_failed"


def test_an_exception_no_entry_knows_is_named_in_the_title(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["[rank0]: step 40 loss 2.31", "[rank1]: Traceback (most recent call last):",
             '[rank1]:   File "train.py", line 88, in <module>',
             "[rank1]: RuntimeError: sampler state for epoch 3 does not match the checkpoint"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert rc["signature"] == "python.exception" and rc["rank"] == 1
    assert rc["title"].startswith("RuntimeError: sampler state for epoch 3 does not match the checkpoint — ")


def test_a_secret_in_the_quoted_line_is_masked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["[rank2]: ValueError: could not log in with password=hunter22secret to the artifact store"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert "hunter22secret" not in rc["title"] and rc["title"].startswith("ValueError: could not log in")


def test_a_long_error_is_cut_and_a_specific_entry_keeps_its_title(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["[rank0]: KeyError: '" + "x" * 400 + "'"]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(tmp_path, capsys)
    said = rc["title"].split(" — ")[0]
    assert said.startswith("KeyError: 'xxx") and said.endswith("…") and len(said) <= 100
    (tmp_path / "a.log").write_text("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                                    "2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n")
    rc = cli_root_cause(tmp_path, capsys)
    assert "Tried to allocate" not in rc["title"] and rc["signature"].startswith("cuda.oom")
