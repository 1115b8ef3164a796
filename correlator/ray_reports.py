"""The raylet's report of a dead worker, cut across lines: its address and pid on a later line. Pure.

The raylet prints a worker's death as one line (src/ray/raylet/node_manager.cc: "A worker died or was killed
while executing a task by an unexpected system error. ... Worker IP address: A Worker port: P Worker PID: N Worker
exit type: ..."), 500 characters and more. A terminal wraps it at its width and a paste keeps the wrap (or a
collector splits it at its line limit): the catalog then matches the report's opening, which names no one, and
the address is on a row a few lines down (correlator/context.py reads it there: ray_died_pid). That row is the
same message's, so the report is about that node's process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from correlator.kept import ContextRecord
from schemas.findings import Finding

RAYLET_DEATH = "ray.worker_crashed"
_ROWS = 4  # rows of the report after its opening: 500-700 characters at 150 and more a row


def cut_raylet_reports(findings: list[Finding], of_kind: Mapping[str, list[ContextRecord]]) -> list[Finding] | None:
    """``findings`` with each raylet death report whose own line names no address given the one a following row of
    it names (the next report's opening ends the search); None where none is."""
    rows = of_kind.get("ray_died_pid", ())
    if not rows:
        return None
    openings = {(f.source, f.line_no) for f in findings if f.signature == RAYLET_DEATH}
    changed = False
    out = []
    for f in findings:
        if f.signature == RAYLET_DEATH and "host" not in f.fields and "Worker IP address:" not in f.text:
            row = _row_of(f, rows, openings)
            if row is not None:
                f = replace(f, fields={**f.fields, "host": str(row.fields["ip"]), "pid": int(row.fields["pid"])})
                changed = True
        out.append(f)
    return out if changed else None


def _row_of(f: Finding, rows: list[ContextRecord] | tuple[()], openings: set[tuple[str, int]]
            ) -> ContextRecord | None:
    for line in range(f.line_no + 1, f.line_no + _ROWS + 1):
        if (f.source, line) in openings:
            return None  # another report begins: this one's rows ended before it
        row = next((r for r in rows if r.source == f.source and r.line_no == line), None)
        if row is not None:
            return row
    return None
