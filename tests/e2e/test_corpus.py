"""Accuracy on the labelled real logs (../shared/corpus/real, 70 logs): a ratchet, so accuracy never silently drops.

The corpus is split by source repository into a tuning half and a checking half (tests/corpus.py); the checking
half is read by nobody while tuning and measured last. Both halves are held here, and so is the promise that
confidence means something: no answer at >= 0.9 names the wrong rank or host. The same figures come from
`python -m bench.corpus --half tuning|checking|all` (the corpus's own score.py, through the CLI).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scan.engine import default_matcher
from tests.corpus import corpus_dir, half_of
from tests.e2e.scoring import class_ok, initiating_ok, root_cause

CORPUS = corpus_dir()
# Counts measured 2026-12-04 (docs/accuracy.md): class of 34 and 36 logs, initiating of the 19 and 26 whose label
# names a rank or host. Raise them, never lower them. No answer at >= 0.9 may be wrong, and the answers wrong at
# >= 0.7 may only fall. 2026-12-07, branch acc25: tuning class 32 -> 33 (a catch-all's title quotes its line).
MIN_CLASS = {"tuning": 33, "checking": 31}
MIN_INITIATING = {"tuning": 18, "checking": 13}
MAX_WRONG_AT_0_9 = 0
MAX_WRONG_AT_0_7 = {"tuning": 0, "checking": 3}

pytestmark = pytest.mark.skipif(CORPUS is None, reason="labelled corpus not present on this machine")


def test_corpus_accuracy_does_not_regress() -> None:
    assert CORPUS is not None
    cmap = json.loads((CORPUS / "class_map.json").read_text())
    labels = [json.loads(line) for line in (CORPUS / "real" / "labels.jsonl").read_text().splitlines() if line]
    tally = {half: {"class": 0, "ini": 0} for half in MIN_CLASS}
    misses, wrong_at_0_9 = [], []
    wrong_at_0_7: dict[str, list[str]] = {half: [] for half in MIN_CLASS}
    matcher = default_matcher()
    for lab in labels:
        rc = root_cause(matcher, Path(CORPUS) / "real" / (lab["id"] + ".log"))
        half = tally[half_of(lab)]
        ok = class_ok(lab["failure_class"], rc, cmap)
        hit = initiating_ok(lab.get("initiating") or {}, rc)
        half["class"] += ok
        half["ini"] += bool(hit)
        if hit is False and float(rc.get("confidence") or 0) >= 0.9:
            wrong_at_0_9.append(lab["id"])
        if hit is False and float(rc.get("confidence") or 0) >= 0.7:
            wrong_at_0_7[half_of(lab)].append(lab["id"])
        if not ok or hit is False:
            misses.append(f"{lab['id']}: class={'ok' if ok else 'MISS'} got={rc.get('signature')} "
                          f"{rc.get('rank')}/{rc.get('host')}")
    print(json.dumps(tally), "\n".join(misses), sep="\n")
    for name, counts in tally.items():
        assert counts["class"] >= MIN_CLASS[name], (name, misses)
        assert counts["ini"] >= MIN_INITIATING[name], (name, misses)
    assert len(wrong_at_0_9) <= MAX_WRONG_AT_0_9, wrong_at_0_9
    for name, wrong in wrong_at_0_7.items():
        assert len(wrong) <= MAX_WRONG_AT_0_7[name], (name, wrong)
