"""bench/independent7: deterministic per seed, labels in the corpus schema, cause lines where labelled present,
every launcher layout and failure kind reachable, ranks named only where a reader could tell, and no import of
the project (the generator stays blind)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.independent7.generate import LAYOUTS, generate
from bench.independent7.kinds import KINDS
from tests.benches.generated_jobs import (
    assert_evidence_in_the_named_files,
    assert_imports_only_the_standard_library,
    assert_known_classes,
    assert_label_in_corpus_schema,
    assert_same_seed_same_bytes,
    labels,
)

PKG = Path(__file__).resolve().parents[2] / "bench" / "independent7"
JOBS = 60  # one seed's worth: every layout fifteen times, each cycling through its own kinds


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ind7")
    generate(d, seed=7, jobs=JOBS)
    return d


def test_same_seed_same_bytes(out: Path, tmp_path: Path) -> None:
    assert_same_seed_same_bytes(generate, out, tmp_path, JOBS)


def test_labels_parse_in_corpus_schema(out: Path) -> None:
    rows = labels(out)
    assert len(rows) == JOBS
    assert {lab["layout"] for lab in rows} == set(LAYOUTS)
    assert {lab["kind"] for lab in rows} == set(KINDS)
    assert_known_classes(rows, PKG / "class_map_additions.json")
    for lab in rows:
        assert_label_in_corpus_schema(out, lab, max_bytes=1_000_000)


def test_label_shape_follows_the_kind(out: Path) -> None:
    """Job-wide causes name neither; node faults at most a host; a rank is named only with a clue a reader of
    the files has (its own prefixed cause line, a launcher report, a flight-recorder line, a silence)."""
    for lab in labels(out):
        ini, level = lab["initiating"], KINDS[lab["kind"]][1]
        if level == "job":
            assert ini["rank"] is None and ini["host"] is None, lab["id"]
        elif level == "host":
            assert ini["rank"] is None, lab["id"]
        assert (ini["rank"] is not None) == (lab["knowable"] == "rank"), lab["id"]
        if lab["knowable"] in ("rank", "host"):
            assert lab["clues"], lab["id"]


def test_some_jobs_cannot_be_told(out: Path) -> None:
    """A few rank or host faults leave nothing that names where they started; their labels say so."""
    untold = [lab for lab in labels(out) if KINDS[lab["kind"]][1] != "job" and lab["knowable"] == "none"]
    assert 1 <= len(untold) <= JOBS // 4


def test_no_path_or_text_names_the_kind(out: Path) -> None:
    """The job's directory and files carry no generator vocabulary a diagnoser could read the answer from."""
    for lab in labels(out):
        assert lab["path"] == lab["id"] and lab["kind"] not in lab["path"]
        for p in (out / lab["path"]).rglob("*"):
            if p.is_file():
                text = p.read_text()
                assert lab["kind"] not in p.name and f"_{lab['kind']}" not in text, (lab["id"], p.name)


def test_cause_line_present_when_labelled(out: Path) -> None:
    for lab in labels(out):
        assert_evidence_in_the_named_files(out, lab)


def test_launcher_reports_name_the_first_failure_only(out: Path) -> None:
    """Hydra, PRRTE and Flux's doom plugin report the first task to end; a straggler's is a collateral rank."""
    for lab in labels(out):
        if lab["kind"] == "silent" and lab["layout"] in ("pbs_hydra", "prterun_efa"):
            text = "".join(p.read_text() for p in (out / lab["path"]).rglob("*") if p.is_file())
            rank = lab["initiating"]["rank"]
            assert f"rank {rank} with PID" not in text and f"RANK {rank} PID" not in text, lab["id"]


def test_imports_only_the_standard_library() -> None:
    assert_imports_only_the_standard_library(PKG)
