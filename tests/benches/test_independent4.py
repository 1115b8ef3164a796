"""bench/independent4: deterministic per seed, labels in the corpus schema, cause lines where labelled present,
every launcher layout and failure kind reachable, and no import of the project (the generator stays blind)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.independent4.generate import LAYOUTS, generate
from bench.independent4.kinds import KINDS
from tests.benches.generated_jobs import (
    assert_imports_only_the_standard_library,
    assert_label_in_corpus_schema,
    assert_same_seed_same_bytes,
    labels,
)

PKG = Path(__file__).resolve().parents[2] / "bench" / "independent4"
JOBS = 60  # one seed's worth: every layout twelve times, every layout's kinds at least once


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ind4")
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
    """Rank faults name a rank and its host; node faults a host only; job-wide causes neither."""
    node_level = {"ib_flap", "node_lost", "container_oom"}
    job_wide = {"bad_ifname", "missing_data", "preempt"}
    for lab in labels(out):
        ini = lab["initiating"]
        if lab["kind"] in job_wide:
            assert ini["rank"] is None and ini["host"] is None, lab["id"]
        elif lab["kind"] in node_level:
            assert ini["rank"] is None and ini["host"], lab["id"]
        else:
            assert ini["rank"] is not None and ini["host"], lab["id"]


def test_cause_line_present_when_labelled(out: Path) -> None:
    for lab in labels(out):
        texts = {str(p.relative_to(out / lab["path"])): p.read_text() for p in (out / lab["path"]).rglob("*")
                 if p.is_file()}
        ev = lab["initiating"]["evidence"]
        holders = sorted(k for k, t in texts.items() if ev in t)
        assert holders == lab["initiating_files"], (lab["id"], ev)
        assert bool(holders) == lab["cause_line_present"]


def test_imports_only_the_standard_library() -> None:
    assert_imports_only_the_standard_library(PKG)
