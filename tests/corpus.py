"""Where the labelled real logs are and how each set splits into a tuning and a checking half: the corpus
(../shared/corpus, split by source repository) and the blind field sets kept under bench/field .. bench/field10
(each split by its labels). The accuracy tests score the product on them; `python -m bench.corpus` scores a half
from the command line (its docstring says how the splits were fixed)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HALVES = ("tuning", "checking")
_REPO = re.compile(r"https://github\.com/([^/]+/[^/#?]+)")


def corpus_dir() -> Path | None:
    """Where ../shared/corpus is on this machine (FIRSTFAULT_CORPUS overrides)."""
    here = ROOT.parent / "shared" / "corpus"
    for cand in (os.environ.get("FIRSTFAULT_CORPUS", ""), str(here), "/work/shared/corpus"):
        if cand and (Path(cand) / "real" / "labels.jsonl").is_file():
            return Path(cand)
    return None


def source_repo(source: str) -> str:
    """The repository a label's source names (`owner/name`), or the source itself when it is not GitHub."""
    found = _REPO.match(source)
    return found.group(1) if found else source


def half_of(label: dict[str, object]) -> str:
    digest = hashlib.sha1(source_repo(str(label.get("source") or "")).encode()).hexdigest()
    return HALVES[int(digest, 16) % 2]


def labels(corpus: Path, half: str = "all") -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (corpus / "real" / "labels.jsonl").read_text().splitlines() if line.strip()]
    return [row for row in rows if half == "all" or half_of(row) == half]


FIELD = ROOT / "bench" / "field"
# Sets of real logs collected blind (by someone who read none of firstfault), each with its own split and class map
# additions: bench/field, field2 .. field10 (each collected later, never read while tuning; see their
# READMEs).
FIELD_SETS = {"field": FIELD, "field2": FIELD.with_name("field2"), "field3": FIELD.with_name("field3"),
              "field4": FIELD.with_name("field4"), "field5": FIELD.with_name("field5"),
              "field6": FIELD.with_name("field6"), "field7": FIELD.with_name("field7"),
              "field8": FIELD.with_name("field8"), "field9": FIELD.with_name("field9"),
              "field10": FIELD.with_name("field10")}


def field_rows(half: str, which: str = "field") -> list[dict[str, object]]:
    root = FIELD_SETS[which]
    rows = [json.loads(line) for line in (root / "labels.jsonl").read_text().splitlines() if line.strip()]
    return [{**row, "path": str(root / str(row["path"]))} for row in rows if half in ("all", row.get("split"))]


def field_class_map(corpus: Path, which: str = "field") -> dict[str, object]:
    """The corpus's class map with a field set's additions (and bench/field's, whose classes later sets reuse)."""
    merged: dict[str, object] = json.loads((corpus / "class_map.json").read_text())
    for name in dict.fromkeys(("field", which)):
        merged.update(json.loads((FIELD_SETS[name] / "class_map_additions.json").read_text()))
    return merged
