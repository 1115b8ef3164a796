"""bench/independent5: deterministic per seed, labels in the corpus schema, cause lines where labelled present,
every launcher layout and failure kind reachable, ranks named only where a reader could tell, and no import of
the project (the generator stays blind)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.independent5.generate import LAYOUTS, generate
from bench.independent5.kinds import KINDS
from tests.benches.generated_jobs import (
    assert_evidence_in_the_named_files,
    assert_imports_only_the_standard_library,
    assert_label_in_corpus_schema,
    assert_same_seed_same_bytes,
    labels,
)

PKG = Path(__file__).resolve().parents[2] / "bench" / "independent5"
JOBS = 60  # one seed's worth: every layout twelve times, every layout's kinds at least once


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ind5")
    generate(d, seed=7, jobs=JOBS)
    return d


def test_same_seed_same_bytes(out: Path, tmp_path: Path) -> None:
    assert_same_seed_same_bytes(generate, out, tmp_path, JOBS)


def test_labels_parse_in_corpus_schema(out: Path) -> None:
    rows = labels(out)
    assert len(rows) == JOBS
    assert {lab["layout"] for lab in rows} == set(LAYOUTS)
    assert {lab["kind"] for lab in rows} == set(KINDS)
    class_map = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "class_map.json"
    known = set(json.loads(class_map.read_text())) if class_map.exists() else None
    for lab in rows:
        assert_label_in_corpus_schema(out, lab, max_bytes=1_000_000)
        if known is not None:
            assert lab["failure_class"] in known, lab["failure_class"]


def test_label_shape_follows_the_kind(out: Path) -> None:
    """Job-wide causes name neither; node faults at most a host; a rank is named only with a reason a reader of
    the files has (a prefix, a launcher's report, a pid join, a flight-recorder dump, a silence)."""
    for lab in labels(out):
        ini, level = lab["initiating"], KINDS[lab["kind"]][1]
        if level == "job":
            assert ini["rank"] is None and ini["host"] is None, lab["id"]
        elif level == "host":
            assert ini["rank"] is None, lab["id"]
        assert (ini["rank"] is not None) == (lab["knowable"] == "rank"), lab["id"]
        if lab["knowable"] != "none" and level != "job":
            assert lab["clues"], lab["id"]


def test_some_jobs_cannot_be_told(out: Path) -> None:
    """A few rank or host faults leave nothing that names where they started; their labels say so."""
    rows = labels(out)
    untold = [lab for lab in rows if KINDS[lab["kind"]][1] != "job" and lab["knowable"] == "none"]
    assert 1 <= len(untold) <= JOBS // 4


def test_cause_line_present_when_labelled(out: Path) -> None:
    for lab in labels(out):
        assert_evidence_in_the_named_files(out, lab)


def test_imports_only_the_standard_library() -> None:
    assert_imports_only_the_standard_library(PKG)
