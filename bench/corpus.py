"""The labelled real corpus, split by source into a tuning half and a checking half, and scored per half.

    .venv/bin/python -m bench.corpus --half tuning -v      # the half we read and tune on
    .venv/bin/python -m bench.corpus --half checking       # measured last, never read while tuning
    .venv/bin/python -m bench.corpus --half all --diagnoser baseline
    .venv/bin/python -m bench.corpus --set field --half checking   # bench/field: 37 more real logs (its README)
    .venv/bin/python -m bench.corpus --set field2 --half checking  # bench/field2: 43 more, collected later
    .venv/bin/python -m bench.corpus --set field3 --half checking  # bench/field3: 35 more, collected after that

The split is by the repository a log came from (its label's `source`), never by log, so that two logs of the
same project (the same launcher, the same cluster's naming) never sit on both sides: a log's half is bit 0 of
the SHA-1 of `owner/name`. The rule was fixed before any log was read; it gives 34 tuning and 36 checking logs.
Scoring is the corpus's own score.py, run on a labels file of one half (each label pointing at its log).

`--set field` scores bench/field instead, a second set of real logs collected from issue threads by someone who
read none of firstfault: its halves are its labels' own `split` (by repository, fixed when it was collected), and
its new failure classes are scored with the words of its class_map_additions.json besides the corpus's map (a
copy of score.py runs beside the merged map; ../shared is never written).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HALVES = ("tuning", "checking")
_REPO = re.compile(r"https://github\.com/([^/]+/[^/#?]+)")


def corpus_dir() -> Path | None:
    """Where ../shared/corpus is on this machine (FIRSTFAULT_CORPUS overrides)."""
    here = Path(__file__).resolve().parents[2] / "shared" / "corpus"
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


FIELD = Path(__file__).resolve().parent / "field"
# Sets of real logs collected blind (by someone who read none of firstfault), each with its own split and class map
# additions: bench/field, bench/field2 and bench/field3 (each collected later, never read while tuning; see their
# READMEs).
FIELD_SETS = {"field": FIELD, "field2": FIELD.with_name("field2"), "field3": FIELD.with_name("field3"),
              "field4": FIELD.with_name("field4")}


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


def _field_scorer(corpus: Path, tmp: Path, which: str = "field") -> Path:
    """score.py beside a class map that knows the field set's classes too."""
    merged = field_class_map(corpus, which)
    (tmp / "class_map.json").write_text(json.dumps(merged))
    shutil.copy(corpus / "score.py", tmp / "score.py")
    return tmp / "score.py"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.corpus")
    ap.add_argument("--set", dest="which", choices=("corpus", *FIELD_SETS), default="corpus")
    ap.add_argument("--half", choices=(*HALVES, "all"), default="tuning")
    ap.add_argument("--diagnoser", default="firstfault")
    ap.add_argument("--exe", default=shutil.which("firstfault") or str(Path(sys.executable).with_name("firstfault")))
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args(argv)
    corpus = corpus_dir()
    if corpus is None:
        print("bench.corpus: ../shared/corpus is not on this machine (set FIRSTFAULT_CORPUS)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{a.half}.jsonl"
        if a.which in FIELD_SETS:
            rows, scorer = field_rows(a.half, a.which), _field_scorer(corpus, Path(tmp), a.which)
        else:
            rows = [{**row, "path": str(corpus / "real" / f"{row['id']}.log")} for row in labels(corpus, a.half)]
            scorer = corpus / "score.py"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        cmd = [sys.executable, str(scorer), str(path), "--diagnoser", a.diagnoser, "--exe", a.exe]
        print(f"{a.which} half {a.half}: {len(rows)} logs", flush=True)
        return subprocess.run(cmd + (["-v"] if a.v else [])).returncode


if __name__ == "__main__":
    sys.exit(main())
