"""A finding's text kept as its digits and a shared skeleton reads back as the line read (issue 23: the texts only
findings hold, a survivor's watchdog and SIGTERM lines, were 0.46 KB a rank at 8,192 ranks)."""

from __future__ import annotations

import copy
import pickle
import sys
from dataclasses import replace

import pytest

from correlator.interned import Interner
from correlator.packed_text import PackedFinding, packed
from correlator.reading import SourceResult
from schemas.findings import Finding, Role, Speaker, finding_json

WATCHDOG = ("[rank5]:[E1129 10:14:10.052143299 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=793, OpType=ALLREDUCE, NumelIn=25165824, NumelOut=25165824, "
            "Timeout(ms)=600000) ran for 600110 milliseconds before timing out.")


def _finding(text: str) -> Finding:
    return Finding(signature="pytorch.c10d.watchdog_timeout", role=Role.COLLATERAL, source="node0/rank5.log",
                   line_no=217, text=text, speaker=Speaker(rank=5, host="node0"), fields={"seq": 793}, order=9)


@pytest.mark.parametrize("text", [WATCHDOG, "007 leading zeros 0 and 00", "ends in 12", "12", "a1b22c333d",
                                  "é 3 ünïcode 45 日本 6"])
def test_the_text_reads_back_equal_and_so_does_the_finding(text: str) -> None:
    f = _finding(text)
    p = packed(f, lambda s: s)
    assert isinstance(p, PackedFinding) and p.text == text
    assert p == f and f == p and finding_json(p) == finding_json(f)
    assert pickle.loads(pickle.dumps(p)) == f and copy.copy(p) == f
    assert replace(p, line_no=3).text == text
    assert repr(p) == repr(f).replace("Finding(", "PackedFinding(", 1)


@pytest.mark.parametrize("text", ["no digits at all", "a NUL\0 and 12"])
def test_a_text_without_digits_or_with_a_nul_is_kept_whole(text: str) -> None:
    f = _finding(text)
    assert packed(f, lambda s: s) is f


def test_the_interner_shares_skeletons_and_leaves_a_records_text_whole() -> None:
    interner = Interner()
    results = []
    for rank in (5, 6):
        text = WATCHDOG.replace("Rank 5", f"Rank {rank}").replace("rank5", f"rank{rank}")
        shared = _finding(f"NCCL WARN socket 10.0.0.{rank} failed : Connection reset by peer")
        record: tuple[object, ...] = ("errorish", {}, "node0/rank5.log", 1, None, None, shared.text, 1)
        results.append(interner.result(SourceResult(f"r{rank}", [_finding(text), shared],
                                                     [record], lines=2, bytes=10)))  # type: ignore[list-item]
    (a, a_shared), (b, _) = (r.findings for r in results)
    assert isinstance(a, PackedFinding) and isinstance(b, PackedFinding)
    assert a._skeleton is b._skeleton  # one copy of the line without its digits
    assert type(a_shared) is Finding and a_shared.text is results[0].context[0].text  # the record's, whole
    assert sys.getsizeof(a.text) > 2 * sys.getsizeof(Finding.__dict__["text"].__get__(a))
