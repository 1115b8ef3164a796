"""The interner shares the numbers of a rank's speakers and fields (correlator/interned.py): its init line's record,
its findings' speaker and the fields NCCL's init line gave hold one int of its rank and one of its pid, each equal to
what was read. The line is NCCL's init line (NVIDIA/nccl src/init.cc: "%s:%d:%d [%d] NCCL INFO comm %p rank %d nranks
%d cudaDev %d nvmlDev %d busId %lx ..."), the finding a survivor's reset of the same process (misc/socket.cc)."""

from __future__ import annotations

import pickle

from correlator.interned import Interner
from correlator.reading import SourceResult
from correlator.speakers import Who
from schemas.findings import Finding, Role, Speaker

INIT = "node3:42285:42346 [1] NCCL INFO comm 0x55d0 rank 1025 nranks 4096 cudaDev 1 nvmlDev 1 busId 1b000 - Init OK"
RESET = ("node3:42285:42346 [1] misc/socket.cc:538 NCCL WARN socketProgressOpt: Call to recv from 10.0.0.46<40364> "
         "failed : Connection reset by peer")


def _result() -> SourceResult:
    """One rank's file as a scan (or a pool's unpickling) leaves it: every number its own int object."""
    def n(value: int) -> int:
        return pickle.loads(pickle.dumps(value))

    who = Who(n(1025), "node3", n(42285), 1)
    record = ("nccl_comm", {"rank": n(1025), "nranks": n(4096), "device": 1, "bus": "1b000"}, "node3/rank1025.log",
              1, who, None, INIT, 1)
    speaker = Speaker(rank=n(1025), host="node3", pid=n(42285), device=1)
    reset = Finding(signature="nccl.bootstrap.connection_reset", role=Role.COLLATERAL, source="node3/rank1025.log",
                    line_no=2, text=RESET, speaker=speaker, fields={"peer": "10.0.0.46"}, order=n(1 << 32))
    again = Finding(signature="nccl.bootstrap.connection_reset", role=Role.COLLATERAL, source="node3/rank1025.log",
                    line_no=3, text=RESET, speaker=speaker, fields={"peer": "10.0.0.46"}, order=n((1 << 32) + 1))
    return SourceResult("node3/rank1025.log", [reset, again], [record], lines=3, bytes=300)  # type: ignore[list-item]


def test_a_ranks_numbers_are_one_int_each_and_read_as_before() -> None:
    made = _result()
    assert made.context[0][4].rank is not made.findings[0].speaker.rank  # as read: one int a place
    result = Interner().result(made)
    record, (reset, again) = result.context[0], result.findings
    assert record.who == Who(1025, "node3", 42285, 1) and record.fields["rank"] == 1025
    assert reset.speaker == Speaker(rank=1025, host="node3", pid=42285, device=1)
    assert reset.speaker is again.speaker  # a speaker's findings still share it
    assert reset.speaker.rank is record.who.rank is record.fields["rank"]
    assert reset.speaker.pid is record.who.pid
    assert reset.order == 1 << 32 and again.order == (1 << 32) + 1
