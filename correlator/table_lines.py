"""The lines of a torchrun failure table are the failed worker's, not the agent's that prints them. Pure.

torchrun's agent ends a failed run with a table (torch/distributed/elastic/multiprocessing/errors/__init__.py,
ChildFailedError.format_msg / _format_failure): per failed worker `time`, `host`, `rank: R (local_rank: L)`,
`exitcode: C (pid: P)`, `error_file`, then `traceback : ...` with the worker's own traceback and message, read
from its error file and re-printed indented. The agent prints it, so a launcher prefix on those lines (srun -l's
"01: ", the node's console) names the agent's node task, not the worker; the row above says whose they are.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import replace

from correlator.identity import ExitRecord
from correlator.kept import ContextRecord
from correlator.speakers import Who
from schemas.findings import Finding

TABLE_SPAN = 60  # lines a row's traceback runs to at most, after its exitcode line


def _rows_by_source(rows: list[ExitRecord], records: Mapping[str, list[ContextRecord]]
                    ) -> dict[str, list[tuple[int, ExitRecord, Who]]]:
    """Each source's table rows, by the line their traceback starts after, with who printed the row."""
    printer = {(rec.source, rec.line_no): rec.who for rec in records.get("table_exit", ())}
    out: dict[str, list[tuple[int, ExitRecord, Who]]] = {}
    for row in rows:
        who = printer.get((row.source, row.line_no))
        if who is not None and row.rank is not None:
            out.setdefault(row.source, []).append((row.line_no, row, who))
    for entries in out.values():
        entries.sort(key=lambda e: e[0])
    return out


def table_speakers(findings: list[Finding], rows: list[ExitRecord], records: Mapping[str, list[ContextRecord]]
                   ) -> list[Finding] | None:
    """The findings with each line of a table row's traceback under the row's rank and host; None if none is.
    ``findings`` is changed in place and returned: it is the diagnosis's own list, and a copy beside it, which the
    diagnosis held too, was the first of settle's transients (37 bytes a rank, and the findings it replaced).
    A line belongs to the last row above it in its file, printed by the same speaker (an interleaved file's
    other tasks keep theirs), before the table's closing border and within TABLE_SPAN lines."""
    by_source = _rows_by_source(rows, records)
    if not by_source:
        return None
    starts = {source: [line for line, _, _ in entries] for source, entries in by_source.items()}
    rules: dict[str, list[int]] = {}
    for rec in records.get("table_rule", ()):
        rules.setdefault(rec.source, []).append(rec.line_no)
    for lines in rules.values():
        lines.sort()
    renamed: dict[int, Finding] = {}  # position in findings -> the finding under its row's rank
    # only the findings of sources with rows can change: a job's other ranks are passed over in one comprehension
    for at in [at for at, f in enumerate(findings) if by_source.get(f.source)]:
        f = findings[at]
        entries = by_source[f.source]
        row = None
        i = bisect_right(starts[f.source], f.line_no - 1) - 1
        if i >= 0:
            line, found, who = entries[i]
            s = f.speaker
            same = (s.rank, s.host, s.pid, s.local_rank) == (who.rank, who.host, who.pid, who.local_rank)
            ends = rules.get(f.source, [])
            j = bisect_right(ends, line)
            end = ends[j] if j < len(ends) else line + TABLE_SPAN
            if same and f.line_no < end and f.line_no - line <= TABLE_SPAN:
                row = found
        if row is not None:
            # the host stays the file's (the row's is `socket.getfqdn()`, which the names step ties to it)
            renamed[at] = replace(f, speaker=replace(f.speaker, rank=row.rank, local_rank=row.local_rank, pid=row.pid))
    if not renamed:
        return None
    for at, f in renamed.items():
        findings[at] = f
    return findings
