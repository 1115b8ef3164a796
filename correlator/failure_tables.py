"""torchrun's failure tables (torch/distributed/elastic/multiprocessing/errors/__init__.py, ChildFailedError.format_msg)
read as exit records: one per failed worker's row, its time, and the row the table heads as its first failure.
Pure: the context records of the table's cells in, records out."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from correlator.kept import ContextRecord


@dataclass(slots=True)  # one a worker that failed, held to the diagnosis's end: no dict each (issue 23)
class ExitRecord:
    rank: int | None
    local_rank: int | None
    host: str | None
    pid: int | None
    exit_code: int
    source: str
    line_no: int
    # A failure-table row recorded after its table's first failure (_later_rows): the agent's teardown of a worker
    # still running then, not how the job's failure began.
    after_first: bool = False
    # Recorded in the same second as another row of its table, the earliest second: ProcessFailure's timestamp is
    # int(time.time()) (or the error file's), and get_first_failure's min() then keeps the first such row in the
    # failures dict's order, so the row headed "Root Cause" is one of the tied rows by order, not by time.
    tied_first: bool = False


def table_rows(records: list[ContextRecord]) -> list[ExitRecord]:
    """Assemble torchrun failure-table rows (time/host/rank/exitcode on neighbouring lines)."""
    rows = []
    # A table's other cells, by source: comparing each rank row with every record was quadratic (3.6 s at 4,096
    # ranks, whose launchers print 512 tables).
    cells: dict[str, list[ContextRecord]] = {}
    for rec in records:
        if rec.kind in ("table_host", "table_exit", "table_time"):
            cells.setdefault(rec.source, []).append(rec)
    times: dict[int, str] = {}  # id of a row -> its `time` cell
    for rec in records:
        if rec.kind != "table_rank":
            continue
        near = [r for r in cells.get(rec.source, ()) if abs(r.line_no - rec.line_no) <= 3]
        host = next((r.fields["host"] for r in near if r.kind == "table_host"), rec.who.host)
        exit_rec = next((r for r in near if r.kind == "table_exit"), None)
        if exit_rec is None:
            continue
        row = ExitRecord(
            rank=int(rec.fields["rank"]),
            local_rank=int(rec.fields["local_rank"]),
            host=host,
            pid=int(exit_rec.fields["pid"]),
            exit_code=int(exit_rec.fields["exit_code"]),
            source=rec.source,
            line_no=exit_rec.line_no,
        )
        # the row's time is printed above its rank (errors/__init__.py _FAILURE_FORMAT_TEMPLATE: time, host, rank)
        when = next((str(r.fields["detail"]) for r in near if r.kind == "table_time" and r.line_no < rec.line_no),
                    None)
        if when is not None:
            times[id(row)] = when
        rows.append(row)
    _later_rows(rows, times, [r for r in records if r.kind == "table_rule"])
    return rows


def _later_rows(rows: list[ExitRecord], times: Mapping[int, str], rules: list[ContextRecord]) -> None:
    """Mark the rows of each table whose time is after the table's first failure. torchrun's agent records each
    failed worker with a timestamp (torch/distributed/elastic/multiprocessing/errors/__init__.py ProcessFailure;
    ChildFailedError.get_first_failure is the earliest, the table's "Root Cause (first observed failure)"). A
    worker recorded later was still running when the first one failed: the agent then stopped it, SIGTERM first
    and SIGKILL once the close timeout passed (multiprocessing/api.py SubprocessContext._close, 30 s by default),
    so its -15 or -9 is the agent's doing, not the worker's death. A table's rows lie between two of its borders
    (one clock: the agent's); rows without a time are left as they are."""
    borders: dict[str, list[int]] = {}
    for rec in rules:
        borders.setdefault(rec.source, []).append(rec.line_no)
    for lines in borders.values():
        lines.sort()
    tables: dict[tuple[str, int], list[ExitRecord]] = defaultdict(list)
    for row in rows:
        if id(row) in times:
            tables[(row.source, bisect_right(borders.get(row.source, []), row.line_no))].append(row)
    for table in tables.values():
        first = min(times[id(row)] for row in table)
        at_first = sum(1 for row in table if times[id(row)] == first)
        for row in table:
            row.after_first = times[id(row)] > first
            row.tied_first = at_first > 1 and times[id(row)] == first


ROOT_ROW_SPAN = 4  # "Root Cause (first observed failure):", "[0]:", time, host, then the row's rank line


def first_failure_rows(tables: list[ContextRecord]) -> list[tuple[int, str | None, str, int]]:
    """The rank of the row under each table's "Root Cause (first observed failure):" header, with the row's host:
    the worker torchrun recorded first. Read even where the row's exit line is cut off or altered."""
    roots: dict[str, list[int]] = {}
    hosts: dict[tuple[str, int], str] = {}
    for rec in tables:
        if rec.kind == "table_root":
            roots.setdefault(rec.source, []).append(rec.line_no)
        elif rec.kind == "table_host":
            hosts[(rec.source, rec.line_no)] = str(rec.fields["host"])
    if not roots:
        return []
    out = []
    for rec in tables:
        if rec.kind != "table_rank":
            continue
        if any(0 < rec.line_no - line <= ROOT_ROW_SPAN for line in roots.get(rec.source, ())):
            host = hosts.get((rec.source, rec.line_no - 1), rec.who.host)
            out.append((int(rec.fields["rank"]), host, rec.source, rec.line_no))
    return out
