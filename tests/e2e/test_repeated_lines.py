"""A line repeated every step costs no memory per repeat, and the diagnosis does not change.

NCCL prints its sub-communicator set-up again and again over a long job; a source keeps each distinct row of
such a line only at its first and last occurrence (correlator.kept.FOLDED_KINDS).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import correlator.kept
from correlator.diagnose import diagnose
from correlator.shards import StoredShard, base_who, merge, result_to_json, source_key
from scan.engine import default_matcher, scan_sources
from schemas.diagnosis import Diagnosis
from simulate.training_logs import generate
from sources.files import expand

REPEATS = 100_000


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("job")
    generate(out, ranks=8, size=10**6, seed=5, failure="oom_kill", quiet=True)
    return out / "logs", json.loads((out / "truth.json").read_text())


def _survivor_log(logs: Path, truth: dict[str, object]) -> Path:
    rank = next(r for r in range(8) if r != truth["victim"])
    return next(logs.rglob(f"rank{rank}.log"))


def _init_line(lines: list[str]) -> int:
    """The index of the first NCCL communicator init line (rank, nranks, cudaDev, busId: two context kinds)."""
    return next(i for i, line in enumerate(lines) if " NCCL INFO comm 0x" in line and " busId " in line)


def _with_repeats(source: Path, at: int) -> None:
    """Insert the source's first init line REPEATS more times before line index ``at``."""
    lines = source.read_text().splitlines(keepends=True)
    source.write_text("".join([*lines[:at], lines[_init_line(lines)] * REPEATS, *lines[at:]]))


def _diagnosis(logs: Path) -> tuple[Diagnosis, int]:
    matcher = default_matcher()
    scan = scan_sources(matcher, expand([str(logs)]), 2026, jobs=1)
    return diagnose(scan.results, matcher.catalog), sum(len(r.context) for r in scan.results)


def _copy(src: Path, dest: Path) -> Path:
    for path in src.rglob("*"):
        if path.is_file():
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    return dest


def test_repeats_are_counted_once_and_diagnose_as_one_line(job: tuple[Path, dict[str, object]],
                                                            tmp_path: Path) -> None:
    logs, truth = job
    once = _copy(logs, tmp_path / "once")
    many = _copy(logs, tmp_path / "many")
    # The repeats go at the end of the file, so every other line keeps its number and the diagnosis can be
    # compared whole; "once" has the line one more time there, "many" 100,000 more times.
    end = len(_survivor_log(once, truth).read_text().splitlines())
    for root, repeats in ((once, 1), (many, REPEATS)):
        source = _survivor_log(root, truth)
        lines = source.read_text().splitlines(keepends=True)
        source.write_text("".join([*lines, lines[_init_line(lines)] * repeats]))
    assert len(_survivor_log(many, truth).read_text().splitlines()) == end + REPEATS

    expected, kept_once = _diagnosis(once)
    found, kept_many = _diagnosis(many)
    assert expected.root_cause is not None and expected.root_cause.rank == truth["victim"]
    assert found.model_dump(mode="json") == expected.model_dump(mode="json")
    # the line yields one record (nccl_comm, its bus included): at most one more last occurrence is kept
    assert kept_many <= kept_once + 1


def test_folding_gives_the_diagnosis_keeping_every_record_gives(job: tuple[Path, dict[str, object]],
                                                               tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeats in the middle of the file, among other NCCL rows and before the failure: the folded records and
    the full list diagnose alike, and so do the source's shards merged as the pipeline stores them."""
    logs, truth = job
    many = _copy(logs, tmp_path / "many")
    source = _survivor_log(many, truth)
    _with_repeats(source, at=len(source.read_text().splitlines()) // 2)

    folded, kept = _diagnosis(many)
    monkeypatch.setattr(correlator.kept, "FOLDED_KINDS", frozenset())
    every, total = _diagnosis(many)
    assert total > REPEATS  # without folding, every repeat is kept (one record a line: nccl_comm)
    assert kept <= total - REPEATS  # fewer than the file without the repeats would keep unfolded
    assert folded.root_cause is not None and folded.root_cause.rank == truth["victim"]
    assert folded.model_dump(mode="json") == every.model_dump(mode="json")

    monkeypatch.undo()
    assert _sharded(many).model_dump(mode="json") == folded.model_dump(mode="json")


def _sharded(logs: Path, chunk: int = 1 << 20) -> Diagnosis:
    """Every file cut into shards of about ``chunk`` bytes at line ends, each scanned alone, then merged."""
    matcher = default_matcher()
    stored = []
    for src in expand([str(logs)]):
        assert src.path is not None
        key = source_key("stdout", None, None, src.name)
        data = Path(src.path).read_bytes()
        pieces, start = [], 0
        while start < len(data):
            end = data.find(b"\n", start + chunk)
            end = len(data) if end < 0 else end + 1
            pieces.append(data[start:end])
            start = end
        for seq, piece in enumerate(pieces):
            scanner = correlator.reading.SourceScanner(matcher, key.name, base_who(key), 2026)
            scanner.feed(piece)
            stored.append(StoredShard(key, seq, seq == len(pieces) - 1, result_to_json(scanner.finish())))
    assert max(s.seq for s in stored) >= 2  # the repeated file spans several shards
    return diagnose(merge(stored), matcher.catalog)
