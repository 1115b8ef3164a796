"""The rank that reports another's failure, then goes away: the others' loss of it is the report's consequence
(correlator/reporters.py). Fixtures written from the formats upstream prints:

- PyTorch's monitored barrier, raised on rank 0 (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp,
  monitoredBarrier: "Rank %d failed to pass monitoredBarrier in %d ms"; "Ranks %s failed to pass ..."), under
  torchrun's `[rankN]:` prefix;
- Gloo's pair on every other rank once rank 0's process exits (gloo/transport/tcp/pair.cc: "Connection closed by
  peer [addr]:port");
- NCCL's init lines, which tie each host to its address (src/bootstrap.cc "Bootstrap : Using eth0:ADDR<0>").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scoring import cli_root_cause

HOSTS = ("node-a", "node-b", "node-c", "node-d")
WORLD = 8


def _job(root: Path, named: list[int], named_speak: bool = False) -> Path:
    root.mkdir()
    for node, host in enumerate(HOSTS):
        lines = []
        for rank in (2 * node, 2 * node + 1):
            pid = 4100 + rank
            lines += [f"[rank{rank}]:{host}:{pid}:{pid} [{rank % 2}] NCCL INFO Bootstrap : Using "
                      f"eth0:10.0.0.{node + 1}<0>",
                      f"[rank{rank}]:{host}:{pid}:{pid + 30} [{rank % 2}] NCCL INFO comm 0x55d3c8a0 rank {rank} "
                      f"nranks {WORLD} cudaDev {rank % 2} busId 1b000 - Init COMPLETE"]
        if node == 0:
            which = (f"Rank {named[0]}" if len(named) == 1 else "Ranks " + ", ".join(map(str, named)))
            lines += ["[rank0]:Traceback (most recent call last):",
                      '[rank0]:  File "/workspace/train.py", line 120, in <module>',
                      "[rank0]:    dist.monitored_barrier(timeout=timedelta(minutes=30))",
                      f"[rank0]:RuntimeError: {which} failed to pass monitoredBarrier in 1800000 ms"]
        else:
            lines += [f"[rank{rank}]:RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
                      f"closed by peer [10.0.0.1]:{20000 + rank}" for rank in (2 * node, 2 * node + 1)
                      if rank not in named or named_speak]
        (root / f"{host}.log").write_text("\n".join(lines) + "\n")
    return root


def test_the_named_rank_not_its_messenger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 0 named rank 5 and exited; five ranks on three hosts then lost rank 0's connection."""
    rc = cli_root_cause(_job(tmp_path / "job", [5]), capsys)
    assert (rc["signature"], rc["rank"]) == ("pytorch.c10d.monitored_barrier", 5)


def test_a_report_naming_most_of_the_job_spares_no_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 0 naming six of the eight ranks, which are all alive to lose rank 0, is rather rank 0 cut off from
    them: no named rank is answered with confidence."""
    rc = cli_root_cause(_job(tmp_path / "job", [2, 3, 4, 5, 6, 7], named_speak=True), capsys)
    assert rc["rank"] not in (2, 3, 4, 5, 6, 7) or float(str(rc["confidence"])) < 0.7
