"""The Flight Recorder analyzer's report of a collective some ranks never joined names them (issue 22, pattern 5:
a straggler without a desync report). Fixtures written from the formats upstream prints:

- torchfrtrace / `python -m torch.distributed.flight_recorder.fr_trace` (pytorch tools/flight_recorder/components/
  builder.py): "Not all ranks joining collective %s at entry %s", "group info: %s", "collective: %s",
  "missing ranks: %s" (a Python set), "input sizes", "output sizes", "expected ranks: {world}", "collective state: %s";
  its first releases printed "Not all ranks joining collective for group ... Missing ranks are {...}" on one line;
- ProcessGroupNCCL.cpp's watchdog timeout on each rank that joined and waited.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firstfault.cli import main

WORLD, MISSING = 8, 5

REPORT = f"""Not all ranks joining collective 4429 at entry 429
group info: 0:default_pg
collective: nccl:all_reduce
missing ranks: {{{MISSING}}}
input sizes: [[50331648]]
output sizes: [[50331648]]
expected ranks: {WORLD}
collective state: scheduled
"""
OLD_REPORT = ("Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  Missing ranks are "
              f"{{{MISSING}}}  [[50331648]] [[50331648]] {WORLD} scheduled\n")


def _job(root: Path, report: str) -> Path:
    root.mkdir()
    for rank in range(WORLD):
        lines = [f"[rank{rank}]:[I1021 09:00:01.000000000 ProcessGroupNCCL.cpp:934] [PG ID 0 PG GUID 0(default_pg) "
                 f"Rank {rank}] ProcessGroupNCCL initialization options: size: {WORLD}"]
        if rank != MISSING:
            lines.append(f"[rank{rank}]:[E1021 10:13:20.302379183 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog "
                         "caught collective operation timeout: WorkNCCL(SeqNum=4429, OpType=ALLREDUCE, "
                         "NumelIn=50331648, NumelOut=50331648, Timeout(ms)=600000) ran for 600253 milliseconds "
                         "before timing out.")
        (root / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    (root / "fr_trace_analysis.txt").write_text(report)
    return root


@pytest.mark.parametrize("report", [REPORT, OLD_REPORT], ids=["builder", "first-release"])
def test_the_rank_missing_from_the_collective_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       report: str) -> None:
    assert main(["diagnose", str(_job(tmp_path / "job", report)), "--format", "json"]) == 0
    rc = json.loads(capsys.readouterr().out)["root_cause"]
    assert (rc["signature"], rc["rank"]) == ("pytorch.c10d.fr_trace_missing_ranks", MISSING)

