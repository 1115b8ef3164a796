"""ProcessGroupNCCL prefixes its lines with the group it speaks for: "[PG ID <id> PG GUID <uid>(<desc>) Rank <r>]"
(pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, createLogPrefix; the description is left out
when it is empty or "undefined"), r being the process's rank IN THAT GROUP. The group's constructor logs, under the
same prefix, "ProcessGroupNCCL initialization options: size: <size>, global rank: <globalRank()>, TIMEOUT(ms): ..."
(2.3 and later), globalRank() being a function-level static the default group (made first) sets: the process's
global rank. So a subgroup's rank is mapped to the global one only where that line says which, and an answer that
rests on a subgroup's rank alone is not given as confident: a world-spanning group prints the global rank there
too, a tensor-parallel group of ranks 4-7 prints 0-3."""

from __future__ import annotations

import pytest

from correlator.diagnose import diagnose
from correlator.subgroups import group_rank
from scan.engine import default_matcher, scan_source
from schemas.diagnosis import RootCause

_CRASH = ("terminate called after throwing an instance of 'c10::DistBackendError'\n"
          "  what():  {prefix} Process group watchdog thread terminated with exception: CUDA error: an illegal "
          "memory access was encountered\n"
          "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
          "might be incorrect.\n")
# the constructor's line, as ProcessGroupNCCL.cpp prints it (glog's prefix, then logPrefix())
_INIT = ("[I1203 10:02:03.123456789 ProcessGroupNCCL.cpp:946] {prefix} ProcessGroupNCCL initialization options: "
         "size: {size}, global rank: {rank}, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, "
         "SPLIT_COLOR: 0, PG Name: 3\n")
_TP = "[PG ID 2 PG GUID 3(TENSOR_MODEL_PARALLEL_GROUP) Rank 1]"


def _root_cause(text: str, name: str = "train.log") -> RootCause:
    m = default_matcher()
    rc = diagnose([scan_source(m, name, [text.encode()], 2026, 0)], m.catalog).root_cause
    assert rc is not None and rc.signature == "cuda.illegal_memory_access"
    return rc


def test_a_subgroups_rank_is_named_by_the_global_rank_its_construction_line_gives() -> None:
    log = _INIT.format(prefix="[PG ID 0 PG GUID 0(default_pg) Rank 5]", size=8, rank=5)
    log += _INIT.format(prefix=_TP, size=4, rank=5) + _CRASH.format(prefix=_TP)
    assert _root_cause(log).rank == 5


def test_a_subgroups_rank_with_no_line_giving_its_global_rank_is_a_suspect_not_an_answer() -> None:
    m = default_matcher()
    d = diagnose([scan_source(m, "train.log", [_CRASH.format(prefix="[PG ID 2 PG GUID 3 Rank 0]").encode()], 2026,
                              0)], m.catalog)
    assert d.verdict == "suspects" and d.root_cause is not None and d.root_cause.confidence < 0.5
    assert [s.rank for s in d.suspects][:1] == [0]


def test_a_world_spanning_groups_construction_line_confirms_its_rank() -> None:
    """A group of every rank numbers them in rank order: its line says global rank = group rank, and the answer is
    as confident as under the default group's prefix."""
    prefix = "[PG ID 1 PG GUID 1 Rank 3]"
    alone = _root_cause(_CRASH.format(prefix=prefix))
    logged = _root_cause(_INIT.format(prefix=prefix, size=8, rank=3) + _CRASH.format(prefix=prefix))
    default = _root_cause(_CRASH.format(prefix="[PG ID 0 PG GUID 0(default_pg) Rank 3]"))
    assert alone.rank == logged.rank == default.rank == 3
    assert logged.confidence == default.confidence > alone.confidence


def test_another_processs_construction_line_in_the_same_group_says_nothing_of_this_one() -> None:
    log = _INIT.format(prefix="[PG ID 2 PG GUID 3 Rank 0]", size=4, rank=4) + _CRASH.format(prefix=_TP)
    rc = _root_cause(log)
    assert rc.rank == 1 and rc.confidence < 0.5


def test_the_launchers_global_rank_still_names_a_subgroups_member() -> None:
    text = "".join(f"[rank6]:{line}\n" for line in _CRASH.format(prefix=_TP).splitlines())
    assert _root_cause(text).rank == 6


@pytest.mark.parametrize(("line", "source", "want"), [
    ("[PG ID 2 PG GUID 3(tp) Rank 1] Watchdog caught collective operation timeout", "train.log", (2, 1)),
    ("[PG ID 2 PG GUID 3 Rank 1] Watchdog caught collective operation timeout", "train.log", (2, 1)),
    ("[PG ID 0 PG GUID 0(default_pg) Rank 1] Watchdog caught", "train.log", None),
    ("[PG ID 4 PG GUID 0(default_pg) Rank 1] Watchdog caught", "train.log", None),  # the default group, made late
    ("[rank5]:[E1203 ProcessGroupNCCL.cpp:632] [PG ID 2 PG GUID 3 Rank 1] Watchdog caught", "train.log", None),
    ("[PG ID 2 PG GUID 3 Rank 1] Watchdog caught", "logs/rank5.log", None),  # the file names the rank
])
def test_which_lines_rest_on_a_subgroups_rank(line: str, source: str, want: tuple[int, int] | None) -> None:
    assert group_rank(line, source, 1) == want
