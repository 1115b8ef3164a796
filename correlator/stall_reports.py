"""Horovod's stall inspector's report of the ranks that never submitted a tensor the others wait on. Pure.

horovod/common/stall_inspector.cc (0.21 and later) logs one warning over several lines: "One or more tensors were
submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for
more than N seconds. ...", then "Missing ranks:", then one line a missing rank, "R: [tensor, tensor, ...]". No
single line says it: a rank's line is only a number and a list of names, so it counts where it follows the
"Missing ranks:" line of the same log, one line after another, as the warning prints them (under mpirun
--tag-output or horovodrun every line carries the reporter's tag). Before 0.21 it was one line, "TENSOR [missing
ranks: 0, 3]", which horovod.stalled_ranks's own fingerprint reads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from catalog.loader import Catalog
from correlator.events import Event, Target
from correlator.identity import IdentityMap
from correlator.kept import ContextRecord
from schemas.findings import Finding, Role, Speaker

HOROVOD_STALL = "horovod.stalled_ranks"
MAX_LINES = 6  # of one rank's reports, cited
_STALL_ORDER = (1 << 61) + (1 << 40)  # after every line read, with the other derived events: a stable tie-break


def stall_events(of_kind: Mapping[str, list[ContextRecord]], catalog: Catalog, ids: IdentityMap) -> list[Event]:
    """One event a missing rank, naming it, from every report that lists it."""
    sig = catalog.get(HOROVOD_STALL)
    heads, rows = of_kind.get("hvd_missing_header", ()), of_kind.get("hvd_missing_rank", ())
    if sig is None or not heads or not rows:
        return []
    row_at = {(rec.source, rec.line_no): rec for rec in rows}
    named: dict[int, list[tuple[ContextRecord, ContextRecord]]] = defaultdict(list)
    for head in heads:
        line = head.line_no + 1
        while (row := row_at.get((head.source, line))) is not None:
            named[int(row.fields["rank"])].append((head, row))
            line += 1
    out = []
    for rank, reports in sorted(named.items()):
        found = [Finding(signature=sig.id, role=Role.INITIATING, source=row.source, line_no=row.line_no,
                         text=row.text, speaker=Speaker(rank=head.who.rank, host=head.who.host, pid=head.who.pid),
                         time=row.time, order=_STALL_ORDER + i)
                 for i, (head, row) in enumerate(reports[:MAX_LINES])]
        head = reports[0][0]
        out.append(Event(found[0], sig, found, Target(head.who.rank, head.who.host),
                         [Target(rank, ids.host_of_rank.get(rank))]))
    return out
