"""bench/independent2: deterministic per seed, labels in the corpus schema, cause lines where labelled present,
and no import of the project (the generator must stay blind to firstfault)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.independent2.generate import LAYOUTS, generate
from tests.benches.generated_jobs import (
    assert_imports_only_the_standard_library,
    assert_label_in_corpus_schema,
    assert_same_seed_same_bytes,
    labels,
)

PKG = Path(__file__).resolve().parents[2] / "bench" / "independent2"
JOBS = 2 * len(LAYOUTS)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ind2")
    generate(d, seed=7, jobs=JOBS)
    return d


def test_same_seed_same_bytes(out: Path, tmp_path: Path) -> None:
    assert_same_seed_same_bytes(generate, out, tmp_path, JOBS)


def test_labels_parse_in_corpus_schema(out: Path) -> None:
    rows = labels(out)
    assert len(rows) == JOBS
    assert {lab["layout"] for lab in rows} == {lay.name for lay in LAYOUTS}
    for lab in rows:
        assert_label_in_corpus_schema(out, lab, max_bytes=400_000)


def test_cause_line_present_when_labelled(out: Path) -> None:
    for lab in labels(out):
        if not lab["cause_line_present"]:
            continue
        ev = lab["initiating"]["evidence"]
        texts = {str(p.relative_to(out / lab["path"])): p.read_text() for p in (out / lab["path"]).rglob("*")
                 if p.is_file()}
        holders = sorted(k for k, t in texts.items() if ev in t)
        assert holders, (lab["id"], ev)
        assert holders == lab["initiating_files"]


def test_imports_only_the_standard_library() -> None:
    assert_imports_only_the_standard_library(PKG)
