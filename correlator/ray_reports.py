"""Ray's reports of a dead worker, read for whom they are about. Pure.

ActorDiedError's tab-indented fields (python/ray/exceptions.py) name the dead actor's node and process, whoever
printed them.
The raylet's report of a dead worker may come cut across lines: its address and pid on a later line.

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
from schemas.findings import Finding, Speaker

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


def dead_actors(findings: list[Finding], of_kind: Mapping[str, list[ContextRecord]]) -> list[Finding] | None:
    """Ray's ActorDiedError report is about the dead actor, whoever printed it (the driver, usually): its lines,
    from the "ActorDiedError:" line through the tab-indented fields ("\tip: ...", python/ray/exceptions.py) to
    the error message after them, speak for the actor's node, and for its rank where verl's actor name gives it
    ("WorkerDict_0:3": rank 3 of the first placement group; of a later one, local rank 3). A raylet death report
    cut across lines first takes its address from its later row (cut_raylet_reports). None: nothing changed."""
    cut = cut_raylet_reports(findings, of_kind)
    findings = cut or findings
    ips = of_kind.get("ray_dead_ip", [])
    if not ips:
        return cut
    names = of_kind.get("ray_dead_name", [])
    pids = of_kind.get("ray_dead_pid", [])
    subject: dict[tuple[str, int], Speaker] = {}  # (source, line) -> the dead actor
    for rec in ips:
        name = next((n for n in names if n.source == rec.source and 0 < rec.line_no - n.line_no <= 5), None)
        group, local = (int(name.fields["group"]), int(name.fields["local_rank"])) if name else (None, None)
        # "\tpid: " comes before the name, namespace and ip when Ray knows it (exceptions.py ActorDiedError)
        pid = next((int(p.fields["pid"]) for p in pids if p.source == rec.source and 0 < rec.line_no - p.line_no <= 5),
                   None)
        actor = Speaker(rank=local if group == 0 else None, local_rank=local, host=str(rec.fields["host"]), pid=pid)
        for line in range(rec.line_no - 6, rec.line_no + 2):
            subject[(rec.source, line)] = actor
    changed = False
    out = []
    for f in findings:
        dead = subject.get((f.source, f.line_no))
        if dead is not None and f.speaker.host is None and f.speaker.rank is None:
            f = replace(f, speaker=dead)
            changed = True
        out.append(f)
    return out if changed else cut
