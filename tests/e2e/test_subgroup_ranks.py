"""ProcessGroupNCCL prefixes its lines with the group it speaks for: "[PG ID <id> PG GUID <uid>(<desc>) Rank <r>]"
(torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, createLogPrefix), r being the rank inside that group. A job with
tensor or pipeline parallel groups (Megatron, NeMo, FSDP's hybrid shards) reports a subgroup's errors with the
subgroup's rank: "PG ID 2 ... Rank 0" is the first member of group 2, not global rank 0. Only the default group's
rank is the global one (desc "default_pg"; before descriptions, id 0: the first NCCL group a process makes)."""

from __future__ import annotations

import pytest

from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_source
from schemas.diagnosis import Diagnosis

_CRASH = ("terminate called after throwing an instance of 'c10::DistBackendError'\n"
          "  what():  {prefix} Process group watchdog thread terminated with exception: CUDA error: an illegal "
          "memory access was encountered\n"
          "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
          "might be incorrect.\n")


def _diagnose(text: str, name: str = "train.log") -> Diagnosis:
    m = default_matcher()
    return diagnose([scan_source(m, name, [text.encode()], 2026, 0)], m.catalog)


def test_a_subgroups_rank_is_not_reported_as_the_global_rank() -> None:
    d = _diagnose(_CRASH.format(prefix="[PG ID 2 PG GUID 3(TENSOR_MODEL_PARALLEL_GROUP) Rank 3]"))
    rc = d.root_cause
    assert rc is not None and rc.signature == "cuda.illegal_memory_access"
    assert rc.rank != 3


def test_a_subgroup_without_a_description_names_no_global_rank_either() -> None:
    rc = _diagnose(_CRASH.format(prefix="[PG ID 2 PG GUID 3 Rank 1]")).root_cause
    assert rc is not None and rc.rank != 1


@pytest.mark.parametrize("prefix", ["[PG ID 0 PG GUID 0(default_pg) Rank 5]", "[PG ID 0 PG GUID 0 Rank 5]",
                                    "[PG ID 1 PG GUID 1(default_pg) Rank 5]"])
def test_the_default_groups_rank_is_the_global_rank(prefix: str) -> None:
    rc = _diagnose(_CRASH.format(prefix=prefix)).root_cause
    assert rc is not None and rc.rank == 5


def test_the_launchers_global_rank_still_names_a_subgroups_member() -> None:
    text = "".join(f"[rank6]:{line}\n" for line in
                   _CRASH.format(prefix="[PG ID 2 PG GUID 3(TENSOR_MODEL_PARALLEL_GROUP) Rank 0]").splitlines())
    rc = _diagnose(text).root_cause
    assert rc is not None and rc.rank == 6
