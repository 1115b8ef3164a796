"""A failure line printed thousands of times (a rank stuck in a retry loop) is held to a few findings for a
diagnosis, and the diagnosis is the one every finding gives (correlator/floods.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from correlator.diagnose import _evidence, diagnose
from correlator.floods import FLOOD_AFTER, MAX_IN_EVENT, MAX_REPEATS
from correlator.reading import SourceResult, SourceScanner
from correlator.speakers import who_from_path
from scan.engine import default_matcher
from schemas.diagnosis import Diagnosis
from sources.files import chunks, expand


def _timeout(rank: int, seq: int) -> str:
    return (f"[rank{rank}]: [E1129 10:{seq // 60000 % 60:02d}:{seq // 1000 % 60:02d}.{seq % 1000:03d}000 1234 "
            f"ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            f"{600000 + seq} milliseconds before timing out.\n")


def _barrier(rank: int, named: int) -> str:
    return f"[rank{rank}]: RuntimeError: Rank {named} failed to pass monitoredBarrier in 30000 ms\n"


def _scan(name: str, text: str, fold: bool) -> SourceResult:
    scanner = SourceScanner(default_matcher(), name, who_from_path(name), 2026, fold_context=fold)
    data = text.encode()
    for start in range(0, len(data), 1 << 20):  # several buffers: the counts carry across them
        scanner.feed(data[start : start + (1 << 20)])
    return scanner.finish()


def _both(logs: dict[str, str]) -> tuple[Diagnosis, Diagnosis, list[SourceResult]]:
    catalog = default_matcher().catalog
    folded = [_scan(name, text, True) for name, text in logs.items()]
    plain = [_scan(name, text, False) for name, text in logs.items()]
    return diagnose(folded, catalog), diagnose(plain, catalog), folded


def _job(flood: str) -> dict[str, str]:
    """Eight ranks; rank 3 floods, the others time out once."""
    logs = {f"rank{r}.log": f"[rank{r}]: step 1 loss 2.0\n" + _timeout(r, 40) for r in range(8) if r != 3}
    logs["rank3.log"] = "[rank3]: step 1 loss 2.0\n" + flood
    return logs


def test_a_run_of_one_failure_line_keeps_its_first_findings() -> None:
    diag, plain, folded = _both(_job("".join(_timeout(3, seq) for seq in range(20_000))))
    [flooded] = [r for r in folded if r.source == "rank3.log"]
    assert len(flooded.findings) == MAX_IN_EVENT
    assert [f.line_no for f in flooded.findings] == list(range(2, 2 + MAX_IN_EVENT))
    assert diag.model_dump() == plain.model_dump()


def test_a_failure_line_printed_every_step_keeps_a_bounded_number_of_events() -> None:
    flood = "".join(f"[rank3]: step {seq} loss 2.0\n" + _timeout(3, seq) for seq in range(5_000))
    diag, plain, folded = _both(_job(flood))
    [flooded] = [r for r in folded if r.source == "rank3.log"]
    # the first FLOOD_AFTER, then MAX_REPEATS of the row, and the last, held at the end of the source
    assert len(flooded.findings) == FLOOD_AFTER + MAX_REPEATS + 1
    assert flooded.findings[-1].line_no == 3 + 2 * 4_999
    assert diag.model_dump() == plain.model_dump()


def test_lines_that_name_different_ranks_are_not_repeats() -> None:
    flood = "".join(f"[rank3]: step {k} loss 2.0\n" + _barrier(3, k % 600) for k in range(1_200))
    diag, plain, folded = _both(_job(flood))
    [flooded] = [r for r in folded if r.source == "rank3.log"]
    named = [f for f in flooded.findings if f.signature == "pytorch.c10d.monitored_barrier"]
    assert {f.fields["rank"] for f in named} == set(range(600))
    assert diag.model_dump() == plain.model_dump()


def test_one_events_lines_each_about_another_rank_are_all_kept() -> None:
    """One run of lines (one event) naming a different rank each, past MAX_IN_EVENT: none repeats another, so
    every one is kept, while the same line about one rank stops at MAX_IN_EVENT (the first test)."""
    flood = "".join(_barrier(3, k) for k in range(3 * MAX_IN_EVENT))
    diag, plain, folded = _both(_job(flood))
    [flooded] = [r for r in folded if r.source == "rank3.log"]
    assert len({f.event for f in flooded.findings}) == 1
    assert sorted(f.fields["rank"] for f in flooded.findings) == list(range(3 * MAX_IN_EVENT))
    assert diag.model_dump() == plain.model_dump()


def test_a_flood_in_a_generated_job_does_not_change_its_diagnosis(tmp_path: Path) -> None:
    from simulate.training_logs import generate

    generate(tmp_path, ranks=16, size=3_000_000, seed=5, failure="cuda_oom")
    logs = {s.name: b"".join(chunks(s)).decode() for s in expand([str(tmp_path / "logs")])}
    name = next(n for n in logs if n.endswith("/rank9.log"))
    logs[name] += "".join(f"[rank9]: step {k} loss 2.0\n" + _timeout(9, 10_000 + k) for k in range(3_000))
    diag, plain, folded = _both(logs)
    assert diag.model_dump() == plain.model_dump()
    assert diag.root_cause is not None and diag.root_cause.signature == "cuda.oom"
    assert len(next(r for r in folded if r.source == name).findings) < FLOOD_AFTER + 2 * MAX_REPEATS


@pytest.mark.parametrize("repeat", [1, 3])
def test_evidence_is_the_first_distinct_lines_of_the_events(repeat: int) -> None:
    """As the list was built before it stopped at MAX_EVIDENCE: every distinct line, then the first six."""
    text = "".join(_timeout(1, seq) for seq in range(4)) * repeat + "[rank1]: step 9 loss 2.0\n" + \
        "".join(_timeout(1, seq) for seq in range(10, 20))
    result = _scan("rank1.log", text, False)
    from correlator.events import build_events
    from correlator.identity import build_identity

    events = build_events(result.findings, default_matcher().catalog, build_identity(result.context))
    every: list[tuple[str, int, str]] = []
    for ev in events:
        for f in [ev.best, *ev.findings]:
            if (f.source, f.line_no, f.text) not in every:
                every.append((f.source, f.line_no, f.text))
    assert [(e.source, e.line, e.text) for e in _evidence(events)] == every[:6]
