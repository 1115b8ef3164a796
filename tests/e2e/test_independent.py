"""Accuracy on jobs written by bench/independent, bench/independent2 and bench/independent3 (generators that
share none of firstfault's code or assumptions, each written blind from the upstream formats): a ratchet on each
one's seed 1, which the sessions tuned against (docs/accuracy.md). Other seeds are their unseen instances: measure
them with `python -m bench.independent.generate OUT --seed N` (or bench.independent2, bench.independent3) and the
corpus's score.py, and do not tune on them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.independent.generate import generate as generate_one
from bench.independent2.generate import generate as generate_two
from bench.independent3.generate import generate as generate_three
from scan.engine import default_matcher
from tests.corpus import corpus_dir
from tests.e2e.scoring import class_ok, initiating_ok, root_cause

CORPUS = corpus_dir()
JOBS = 60
# seed 1, measured 2026-12-03 14:55: class of 60 jobs, initiating of the 53 whose label names a rank or a host
# (score.py's rule: 36 of 43 ranks, 7 of 10 hosts). Raise them, never lower them. The one answer at >= 0.9 that
# score.py counts wrong is an NCCL release mismatch between two hosts, read as the job's (two hosts, one release
# each: nothing says which is the odd one) where the label names one of them. 2026-12-03 20:35: initiating 43 -> 45
# (an Xid's pid, and a Kubernetes node's Xid looked up in the one pod the node ran: correlator/pod_nodes.py);
# 20:45: 45 -> 46 (the host the TCPStore clients lost is rank 0's where no line places rank 0).
# bench/independent2 seed 1 (10 launch layouts, 21 kinds), written 2026-12-07: class 46 and initiating 25 of the 57
# labels naming a rank or host at that session's start; 52 and 40 at its end (JAX's coordination-service report
# and the task it names placed by elimination, Ray Train's worker table, spawn's carried errors, XLA's OOM).
# 2026-12-07, branch acc22: 53 and 49 (kubectl get events rows, the Flight Recorder analyzer's missing ranks,
# Horovod's multi-line stall report, srun's `task N: Out Of Memory`, the monitored barrier's messenger spared, Ray
# Train ranks on their node's address, kernel logs named by address; docs/accuracy.md, "A second pass").
# bench/independent3 seed 1 (6 layouts: Lightning, NeMo exp_manager, DeepSpeed rank logs, torchrun --log-dir,
# kubectl --prefix, split Megatron sbatch; 16 kinds), 2026-12-07 branch acc24b: class 52 and initiating 39 of 52 at
# the start (7 answers >= 0.7 wrong, 3 >= 0.9); 57 and 47, none >= 0.7 wrong, at its end (NeMo's and sbatch's file
# names, torchrun's teardown pids, one restart's SeqNums, the watchdog's carried CUDA error paired with the Xid, the
# AER yielding to its Xid 79, kubectl's pod prefix, a teardown's SIGTERM not an outside stop; docs/accuracy.md).
# 2026-12-07, branch acc25: independent2 class 53 -> 55 (a JAX task whose heartbeats stopped was killed or lost
# its host; the catch-alls' titles quote their lines).
FLOORS = {"independent": (57, 46), "independent2": (55, 49), "independent3": (57, 47)}
MAX_WRONG_AT_0_9 = 0

pytestmark = pytest.mark.skipif(CORPUS is None, reason="class_map.json of ../shared/corpus not present")


@pytest.mark.parametrize("which", sorted(FLOORS))
def test_independent_generator_accuracy_does_not_regress(which: str, tmp_path: Path) -> None:
    assert CORPUS is not None
    min_class, min_initiating = FLOORS[which]
    if which == "independent":
        generate_one(str(tmp_path), 1, JOBS)
    elif which == "independent2":
        generate_two(tmp_path, 1, JOBS)
    else:
        generate_three(tmp_path, 1, JOBS)
    cmap = json.loads((CORPUS / "class_map.json").read_text())
    labels = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines() if line]
    matcher = default_matcher()
    right_class = right_ini = 0
    wrong_at_0_9, misses = [], []
    for lab in labels:
        rc = root_cause(matcher, tmp_path / lab["id"])
        ok_class = class_ok(lab["failure_class"], rc, cmap)
        ok_ini = initiating_ok(lab["initiating"], rc)
        right_class += ok_class
        right_ini += bool(ok_ini)
        if ok_ini is False and float(rc.get("confidence") or 0) >= 0.9:
            wrong_at_0_9.append(lab["id"])
        if not ok_class or ok_ini is False:
            misses.append((lab["id"], lab.get("kind"), rc.get("signature"), rc.get("rank"), rc.get("host")))
    assert right_class >= min_class, misses
    assert right_ini >= min_initiating, misses
    assert len(wrong_at_0_9) <= MAX_WRONG_AT_0_9, wrong_at_0_9
