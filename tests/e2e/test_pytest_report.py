"""A distributed unit test's failure as pytest reports it: the exception's lines under pytest's fail marker.

Fixtures written from the formats upstream prints:

- pytest (src/_pytest/_code/code.py, FormattedExcinfo.get_exconly with markall=True): every line of the exception
  is prefixed "E" and the indentation less one ("E   " at indent 4, "E       " at 8);
- torch.multiprocessing.spawn (torch/multiprocessing/spawn.py, ProcessContext.join): ProcessRaisedException's
  message "\\n\\n-- Process N terminated with the following error:\\n" and the worker's own traceback;
- ProcessGroupNCCL (torch/csrc/distributed/c10d/NCCLUtils.hpp, C10D_NCCL_CHECK): "NCCL error in: FILE:LINE,
  unhandled system error, NCCL version X", then ncclSystemError's last-error text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main


def _report(process: int, indent: int) -> str:
    mark = "E" + " " * (indent - 1)
    exception = ["torch.multiprocessing.spawn.ProcessRaisedException:", "", f"-- Process {process} terminated with "
                 "the following error:", "Traceback (most recent call last):",
                 '  File "/usr/lib/python3.9/site-packages/torch/multiprocessing/spawn.py", line 59, in _wrap',
                 "    fn(i, *args)",
                 '  File "/work/tests/test_tensor/test_gpt2.py", line 105, in run_dist',
                 "    run_gpt(init_1d_row_spec, use_ddp)",
                 '  File "/usr/lib/python3.9/site-packages/torch/nn/parallel/distributed.py", line 578, in __init__',
                 "    dist._verify_model_across_ranks(self.process_group, parameters)",
                 "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:957, "
                 "unhandled system error, NCCL version 2.10.3",
                 "ncclSystemError: System call (socket, malloc, munmap, etc) failed."]
    lines = ["    def test_gpt2():", " " * (indent - 4) + ">       mp.spawn(run_dist, nprocs=4)", "",
             *((mark + line).rstrip() for line in exception),
             "", "/usr/lib/python3.9/site-packages/torch/multiprocessing/spawn.py:160: ProcessRaisedException",
             "=========================== short test summary info ============================",
             "FAILED tests/test_tensor/test_gpt2.py::test_gpt2 - torch.multiprocessing.spawn.ProcessRaisedException:"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("indent", [4, 8])
def test_the_spawned_workers_error_under_pytests_marker_is_the_cause_of_its_process(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], indent: int) -> None:
    """The worker's NCCL error is what failed, and spawn's head under it says whose (process 2 of one machine):
    read through pytest's marker, the two are one message, as they are bare."""
    (tmp_path / "pytest.log").write_text(_report(2, indent))
    assert main(["diagnose", str(tmp_path / "pytest.log"), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["signature"], rc["rank"]) == ("pytorch.c10d.nccl_error_system", 2)
