"""What a 131,072-rank job's diagnosis gives a reader, the store and Slack stays a few lines and kilobytes: its
collateral is summarised (runs of ranks, the first hosts, counts), never listed rank by rank (issue 23)."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime

import pytest
from rich.console import Console

from firstfault.render import render_markdown, render_text
from notifiers.slack_message import incident_blocks
from schemas.diagnosis import CollateralGroup, Diagnosis, RootCause
from schemas.incident import Incident

WORLD = 131_072
VICTIM = 14_858
HOSTS = [f"node{n:05d}" for n in range(WORLD // 8)]


def _diagnosis(ranks: list[int]) -> Diagnosis:
    rc = RootCause(signature="host.oom_killer", title="Linux OOM killer killed a process", category="memory",
                   rank=VICTIM, host=HOSTS[VICTIM // 8], confidence=0.97)
    collateral = [CollateralGroup.of("pytorch.c10d.watchdog_timeout", ranks, HOSTS, len(ranks)),
                  CollateralGroup.of("nccl.bootstrap.connection_reset", ranks, HOSTS, len(ranks)),
                  CollateralGroup.of("torchrun.worker_failed", [], HOSTS, len(HOSTS))]
    return Diagnosis(verdict="diagnosed", root_cause=rc, collateral=collateral)


EVERY_OTHER_RANK = [r for r in range(WORLD) if r != VICTIM]
EVERY_SECOND_RANK = list(range(0, WORLD, 2))  # the worst case for runs: 65,536 of one rank each


@pytest.mark.parametrize("ranks", [EVERY_OTHER_RANK, EVERY_SECOND_RANK], ids=["all-but-one", "every-second"])
def test_a_131072_rank_diagnosis_renders_in_a_few_lines_and_kilobytes(ranks: list[int]) -> None:
    d = _diagnosis(ranks)
    console = Console(file=io.StringIO(), width=120, color_system=None)
    render_text(d, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    now = datetime(2026, 11, 29, tzinfo=UTC)
    slack = json.dumps(incident_blocks(Incident(id="inc-1", job_id="job", created_at=now, updated_at=now,
                                                diagnosis=d), "https://firstfault.example/incidents/inc-1"))
    assert text.count("\n") < 40 and len(text) < 8_000
    assert len(render_markdown(d)) < 8_000
    assert len(slack) < 12_000
    assert len(d.model_dump_json()) < 64_000  # what the CLI prints and the store keeps per revision


def test_the_summary_still_says_who_printed_what() -> None:
    d = _diagnosis(EVERY_OTHER_RANK)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render_text(d, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"ranks 0-{VICTIM - 1},{VICTIM + 1}-{WORLD - 1}" in text
    assert f"+{len(HOSTS) - 4}" in text
    group = d.collateral[0]
    assert (group.rank_count, group.host_count) == (WORLD - 1, len(HOSTS))
    assert group.ranks[:3] == [0, 1, 2] and len(group.ranks) < WORLD


def test_sparse_ranks_say_how_many_their_runs_leave_out() -> None:
    console = Console(file=io.StringIO(), width=1000, color_system=None)
    render_text(_diagnosis(EVERY_SECOND_RANK), console)
    found = re.search(r"ranks ([\d,]+) \+(\d+) more", console.file.getvalue())  # type: ignore[attr-defined]
    assert found is not None
    shown = found[1].split(",")
    assert shown[:3] == ["0", "2", "4"] and len(shown) + int(found[2]) == WORLD // 2


def test_a_group_stored_before_the_counts_existed_reads_with_them() -> None:
    group = CollateralGroup.model_validate({"signature": "x", "ranks": [0, 1, 2, 5], "hosts": ["a", "b"],
                                            "count": 4})
    assert (group.rank_count, group.host_count, group.rank_spans) == (4, 2, [(0, 2), (5, 5)])
