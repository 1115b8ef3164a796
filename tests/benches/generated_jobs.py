"""What every blind generator of labelled jobs (bench/independent2 ... independent7, run by
tests/benches/test_blind_generators.py) must hold: the same bytes for the same seed, labels in the corpus schema,
and no import beyond the standard library."""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def labels(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "labels.jsonl").read_text().splitlines() if x.strip()]


def assert_same_seed_same_bytes(generate: Callable[..., Any], out: Path, tmp_path: Path, jobs: int) -> None:
    """``out`` was generated with seed 7 and ``jobs`` jobs."""
    generate(tmp_path, seed=7, jobs=jobs)
    assert tree(tmp_path) == tree(out)
    other = tmp_path / "other"
    generate(other, seed=8, jobs=3)
    assert (other / "labels.jsonl").read_bytes() != (out / "labels.jsonl").read_bytes()


def assert_label_in_corpus_schema(out: Path, lab: dict[str, Any], max_bytes: int) -> None:
    assert {"id", "path", "failure_class", "initiating", "root_cause", "confidence"} <= set(lab)
    assert (out / lab["path"]).is_dir()
    assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", lab["failure_class"])
    assert lab["confidence"] in ("high", "medium")
    ini = lab["initiating"]
    assert set(ini) == {"rank", "host", "evidence"}
    assert ini["rank"] is None or 0 <= ini["rank"] < lab["world_size"]
    assert ini["host"] is None or (isinstance(ini["host"], str) and ini["host"])
    if ini["rank"] is not None:
        assert ini["host"] is not None  # a labelled rank always runs on a known host
    assert lab["confidence"] == ("high" if lab["cause_line_present"] else "medium")
    size = sum(p.stat().st_size for p in (out / lab["path"]).rglob("*") if p.is_file())
    assert size < max_bytes


def assert_known_classes(rows: list[dict[str, Any]], additions: Path | None = None) -> None:
    """Every label's class is in ../shared/corpus/class_map.json (when present) or in the generator's own
    class_map_additions.json (classes the corpus map lacks; score.py falls back to its all-words rule on them)."""
    class_map = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "class_map.json"
    if not class_map.exists():
        return
    known = set(json.loads(class_map.read_text()))
    if additions is not None and additions.exists():
        known |= set(json.loads(additions.read_text()))
    for lab in rows:
        assert lab["failure_class"] in known, lab["failure_class"]


def assert_evidence_in_the_named_files(out: Path, lab: dict[str, Any]) -> None:
    """The label's evidence line is in exactly the files it names, and `cause_line_present` says whether any."""
    root = out / lab["path"]
    texts = {}
    for p in root.rglob("*"):
        if p.is_file():
            try:
                texts[str(p.relative_to(root))] = p.read_text()
            except UnicodeDecodeError:  # a binary file (a flight-recorder pickle) holds no evidence line
                continue
    ev = lab["initiating"]["evidence"]
    holders = sorted(k for k, t in texts.items() if ev in t)
    assert holders == lab["initiating_files"], (lab["id"], ev)
    assert bool(holders) == lab["cause_line_present"]


def assert_imports_only_the_standard_library(package: Path) -> None:
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    for py in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(), filename=str(py))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    assert a.name.split(".")[0] in allowed, (py.name, a.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    assert (node.module or "").split(".")[0] in allowed, (py.name, node.module)
                else:
                    assert node.level == 1, (py.name, node.module)  # only siblings inside the package
