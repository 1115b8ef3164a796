"""bench/independent3: deterministic per seed, labels in the corpus schema, cause lines where labelled present,
and no import of the project (the generator must stay blind to firstfault)."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

from bench.independent3.generate import LAYOUTS, generate
from bench.independent3.kinds import KINDS

PKG = Path(__file__).resolve().parents[2] / "bench" / "independent3"
JOBS = 2 * len(KINDS)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ind3")
    generate(d, seed=7, jobs=JOBS)
    return d


def _labels(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "labels.jsonl").read_text().splitlines() if x.strip()]


def test_same_seed_same_bytes(out: Path, tmp_path: Path) -> None:
    generate(tmp_path, seed=7, jobs=JOBS)
    assert _tree(tmp_path) == _tree(out)
    other = tmp_path / "other"
    generate(other, seed=8, jobs=3)
    assert (other / "labels.jsonl").read_bytes() != (out / "labels.jsonl").read_bytes()


def test_labels_parse_in_corpus_schema(out: Path) -> None:
    labels = _labels(out)
    assert len(labels) == JOBS
    assert {lab["layout"] for lab in labels} == {lay.name for lay in LAYOUTS}
    assert {lab["kind"] for lab in labels} == set(KINDS)
    class_map = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "class_map.json"
    known = set(json.loads(class_map.read_text())) if class_map.exists() else None
    for lab in labels:
        assert {"id", "path", "failure_class", "initiating", "root_cause", "confidence"} <= set(lab)
        assert (out / lab["path"]).is_dir()
        assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", lab["failure_class"])
        if known is not None and lab["failure_class"] != "xid_119":
            assert lab["failure_class"] in known, lab["failure_class"]
        assert lab["confidence"] in ("high", "medium")
        ini = lab["initiating"]
        assert set(ini) == {"rank", "host", "evidence"}
        assert ini["rank"] is None or 0 <= ini["rank"] < lab["world_size"]
        assert ini["host"] is None or (isinstance(ini["host"], str) and ini["host"])
        if ini["rank"] is not None:
            assert ini["host"] is not None  # a labelled rank always runs on a known host
        assert lab["confidence"] == ("high" if lab["cause_line_present"] else "medium")
        size = sum(p.stat().st_size for p in (out / lab["path"]).rglob("*") if p.is_file())
        assert size < 1_000_000


def test_cause_line_present_when_labelled(out: Path) -> None:
    for lab in _labels(out):
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
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    for py in sorted(PKG.glob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(), filename=str(py))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    assert a.name.split(".")[0] in allowed, (py.name, a.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    assert (node.module or "").split(".")[0] in allowed, (py.name, node.module)
                else:
                    assert node.level == 1, (py.name, node.module)  # only siblings inside the package
