"""bench/independent3: deterministic per seed, labels in the corpus schema, cause lines where labelled present,
and no import of the project (the generator must stay blind to firstfault)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.independent3.generate import LAYOUTS, generate
from bench.independent3.kinds import KINDS
from tests.benches.generated_jobs import (
    assert_imports_only_the_standard_library,
    assert_label_in_corpus_schema,
    assert_same_seed_same_bytes,
    labels,
)

PKG = Path(__file__).resolve().parents[2] / "bench" / "independent3"
JOBS = 2 * len(KINDS)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ind3")
    generate(d, seed=7, jobs=JOBS)
    return d


def test_same_seed_same_bytes(out: Path, tmp_path: Path) -> None:
    assert_same_seed_same_bytes(generate, out, tmp_path, JOBS)


def test_labels_parse_in_corpus_schema(out: Path) -> None:
    rows = labels(out)
    assert len(rows) == JOBS
    assert {lab["layout"] for lab in rows} == {lay.name for lay in LAYOUTS}
    assert {lab["kind"] for lab in rows} == set(KINDS)
    class_map = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "class_map.json"
    known = set(json.loads(class_map.read_text())) if class_map.exists() else None
    for lab in rows:
        assert_label_in_corpus_schema(out, lab, max_bytes=1_000_000)
        if known is not None and lab["failure_class"] != "xid_119":
            assert lab["failure_class"] in known, lab["failure_class"]


def test_cause_line_present_when_labelled(out: Path) -> None:
    for lab in labels(out):
        texts = {}
        for p in (out / lab["path"]).rglob("*"):
            if p.is_file():
                try:
                    texts[str(p.relative_to(out / lab["path"]))] = p.read_text()
                except UnicodeDecodeError:  # flight recorder pickles
                    continue
        ev = lab["initiating"]["evidence"]
        holders = sorted(k for k, t in texts.items() if ev in t)
        assert holders == lab["initiating_files"], (lab["id"], ev)
        assert bool(holders) == lab["cause_line_present"]


def test_imports_only_the_standard_library() -> None:
    assert_imports_only_the_standard_library(PKG)
