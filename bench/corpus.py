"""The labelled real corpus, split by source into a tuning half and a checking half, and scored per half.

    .venv/bin/python -m bench.corpus --half tuning -v      # the half we read and tune on
    .venv/bin/python -m bench.corpus --half checking       # measured last, never read while tuning
    .venv/bin/python -m bench.corpus --half all --diagnoser baseline
    .venv/bin/python -m bench.corpus --set field --half checking   # bench/field: 37 more real logs (its README)
    .venv/bin/python -m bench.corpus --set field2 --half checking  # bench/field2: 43 more, collected later
    .venv/bin/python -m bench.corpus --set field3 --half checking  # bench/field3: 35 more, collected after that
    .venv/bin/python -m bench.corpus --set field6 --half tuning    # bench/field6: 40 more, initiator-rich (its README)
    .venv/bin/python -m bench.corpus --set field7 --half tuning    # bench/field7: 40 more, blind (its README)
    .venv/bin/python -m bench.corpus --set field8 --half tuning    # bench/field8: 40 more, blind (its README)
    .venv/bin/python -m bench.corpus --set field9 --half tuning    # bench/field9: 40 more, blind (its README)
    .venv/bin/python -m bench.corpus --set field10 --half tuning   # bench/field10: 40 more, first contact (its README)

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
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# where the labelled sets are and how they split: the tests score the product on them too
from tests.corpus import FIELD_SETS, HALVES, corpus_dir, field_class_map, field_rows, labels, source_repo

__all__ = ["FIELD_SETS", "HALVES", "corpus_dir", "field_class_map", "field_rows", "labels", "main", "source_repo"]

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
