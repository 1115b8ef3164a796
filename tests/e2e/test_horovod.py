"""Horovod under mpirun (`[jobid,rank]<stream>:` tags). When one rank fails, Horovod's background thread stops and
every other rank's next collective fails with SHUT_DOWN_ERROR ("Horovod has been shut down. This was caused by an
exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the ranks
finished execution...": horovod/common/operations.cc): victims' lines. Its stall inspector names the ranks that
never submitted a tensor the others wait on ("TENSOR [missing ranks: 2]": horovod/common/stall_inspector.cc)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

SHUT_DOWN = ("Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to "
             "allreduce, allgather or broadcast a tensor after one of the ranks finished execution. If the shutdown "
             "was caused by an exception, you should see the exception in the log before the first shutdown message.")


def test_the_rank_that_raised_before_the_shutdown_is_named(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f"[1,{r}]<stdout>:epoch 3 step 800 loss 0.9{r}" for r in range(4)]
    lines += ["[1,2]<stderr>:Traceback (most recent call last):",
              '[1,2]<stderr>:  File "train.py", line 210, in <module>',
              "[1,2]<stderr>:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
              "total capacity of 79.15 GiB of which 1.02 GiB is free."]
    for r in (0, 1, 3):
        lines.append(f"[1,{r}]<stderr>:RuntimeError: {SHUT_DOWN}")
    log = tmp_path / "horovod.log"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["rank"], rc["signature"]) == (2, "cuda.oom")


def test_shutdown_lines_alone_name_nobody_with_confidence(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "horovod.log"
    log.write_text("\n".join(f"[1,{r}]<stderr>:RuntimeError: {SHUT_DOWN}" for r in (2, 3)) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] == "horovod.shut_down"
    assert float(str(rc["confidence"])) < 0.5


def test_the_stall_inspectors_missing_rank_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [f"[1,{r}]<stdout>:step 120" for r in range(4)]
    lines += ["[1,0]<stderr>:[2026-12-03 10:00:00.000000: W horovod/common/stall_inspector.cc:105] One or more "
              "tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for "
              "remainder of ranks for more than 60 seconds.",
              "[1,0]<stderr>:DistributedOptimizer_Allreduce/HorovodAllreduce_grads_0 [missing ranks: 2]"]
    log = tmp_path / "horovod.log"
    log.write_text("\n".join(lines) + "\n")
    assert cli_root_cause(log, capsys)["rank"] == 2


def test_horovodruns_own_rank_tags_name_the_global_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # horovodrun without MPI (horovod/runner/gloo_run.py: index=slot_info.rank; safe_shell_exec.py
    # prefix_connection: '{time}[{rank}]<{prefix}>:') tags each line with the global rank and no job id
    lines = [f"[{r}]<stdout>:epoch 1 step 40 loss 1.2{r}" for r in range(4)]
    lines += ["Wed Dec  2 09:14:05 2026[3]<stderr>:Traceback (most recent call last):",
              "Wed Dec  2 09:14:05 2026[3]<stderr>:  File \"train.py\", line 88, in <module>",
              "Wed Dec  2 09:14:05 2026[3]<stderr>:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
              "1.50 GiB. GPU 0 has a total capacity of 39.39 GiB of which 0.61 GiB is free."]
    lines += [f"[{r}]<stderr>:RuntimeError: {SHUT_DOWN}" for r in (0, 1, 2)]
    log = tmp_path / "horovod.log"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["rank"], rc["signature"]) == (3, "cuda.oom")


_STALL = ("[2026-12-03T10:00:00.000137: W /tmp/pip-req-build/horovod/common/stall_inspector.cc:107] One or more "
          "tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for "
          "remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit "
          "different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. ")


@pytest.mark.parametrize("tag", ["[1,0]<stderr>:", "Thu Dec  3 10:00:00 2026[0]<stderr>:", ""])
def test_the_stall_inspectors_report_over_several_lines_names_its_missing_rank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], tag: str) -> None:
    """stall_inspector.cc since 0.21: "Missing ranks:", then one "R: [tensor names]" line a rank (a report seen in
    horovod's own issue threads), each line under the reporter's tag; every minute again until the job ends."""
    lines = [f"[1,{r}]<stdout>:step 120" for r in range(4)]
    for minute in range(2):
        lines += [tag + _STALL, tag + "Missing ranks:",
                  tag + f"3: [DistributedSGD_Allreduce/cond/HorovodAllreduce_grads_{minute}, "
                        "DistributedSGD_Allreduce/cond_1/HorovodAllreduce_grads_1_0]"]
    lines += [f"[1,{r}]<stderr>:RuntimeError: {SHUT_DOWN}" for r in (0, 1, 2)]
    log = tmp_path / "horovod.log"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert (rc["rank"], rc["signature"]) == (3, "horovod.stalled_ranks")


def test_a_numbered_list_line_without_the_report_names_nobody(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """"R: [names]" alone is any numbered list: only under "Missing ranks:" is it a missing rank."""
    lines = ["[1,0]<stderr>:Parameters by group:", "[1,0]<stderr>:3: [layer1.weight, layer1.bias]",
             *(f"[1,{r}]<stderr>:RuntimeError: {SHUT_DOWN}" for r in (0, 1, 2))]
    log = tmp_path / "horovod.log"
    log.write_text("\n".join(lines) + "\n")
    rc = cli_root_cause(log, capsys)
    assert rc["signature"] != "horovod.stalled_ranks" and rc["rank"] != 3
