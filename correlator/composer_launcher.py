"""MosaicML Composer's launcher: whose lines its crash report re-prints, and which ranks it saw exit. Pure.

`composer -n P --world_size W --node_rank N train.py` (mosaicml/composer composer/cli/launcher.py) runs one node's
ranks with their output in files, and on the first crash prints, to the node's console:
- `_monitor_processes`: log.error(f'Rank {global_rank} crashed with exit code {process.returncode}.'), the first
  rank it saw end non-zero (logging.basicConfig's "ERROR:composer.cli.launcher:" before it);
- `_print_process_exit_status`, for each rank that ended non-zero by other than the SIGKILL or SIGTERM the
  launcher sends itself: "Global rank R (PID P) exited with code C", then "----------Begin global rank R
  STDOUT----------" (or "logs" when stderr went with stdout), the rank's output, "----------End global rank R
  STDOUT----------", and the same around its STDERR: the lines between are rank R's, whatever prefix they lack;
- `_aggregate_process_returncode`: log.error('Global rank %s (PID %s) exited with code %s', ...), the first rank
  in rank order that ended non-zero (often one the launcher's own SIGTERM ended: -15).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import replace

from correlator.failure_tables import ExitRecord
from correlator.kept import ContextRecord
from schemas.findings import Finding


def _blocks(records: Mapping[str, list[ContextRecord]]) -> dict[str, list[tuple[int, int, int]]]:
    """Each source's rank blocks: (first line, last line, rank), by first line. A Begin without its End (a file
    cut short) runs to the file's end."""
    opened: dict[tuple[str, int], int] = {}
    out: dict[str, list[tuple[int, int, int]]] = {}
    for rec in sorted(records.get("composer_block", ()), key=lambda r: (r.source, r.line_no)):
        rank = int(rec.fields["rank"])
        if rec.fields["edge"] == "Begin":
            opened[(rec.source, rank)] = rec.line_no
        elif (start := opened.pop((rec.source, rank), None)) is not None:
            out.setdefault(rec.source, []).append((start, rec.line_no, rank))
    for (source, rank), start in opened.items():
        out.setdefault(source, []).append((start, 1 << 62, rank))
    for spans in out.values():
        spans.sort()
    return out


def block_speakers(findings: list[Finding], records: Mapping[str, list[ContextRecord]]) -> list[Finding] | None:
    """The findings with each line inside a "Begin global rank R" / "End global rank R" block under rank R (a
    line that names another rank itself keeps it); None where no block holds one. Changed in place, as
    table_lines.table_speakers changes them."""
    spans = _blocks(records)
    if not spans:
        return None
    starts = {source: [start for start, _, _ in entries] for source, entries in spans.items()}
    changed = False
    for at, f in enumerate(findings):
        entries = spans.get(f.source)
        if not entries:
            continue
        i = bisect_right(starts[f.source], f.line_no - 1) - 1
        if i < 0:
            continue
        start, end, rank = entries[i]
        if start < f.line_no < end and f.speaker.rank in (None, rank):
            findings[at] = replace(f, speaker=replace(f.speaker, rank=rank))
            changed = True
    return findings if changed else None


def composer_exits(records: Mapping[str, list[ContextRecord]]) -> list[ExitRecord]:
    """The ranks the launcher reports ended, with their codes (and pids where it prints them). No host: the
    console's own name is its file's, which need not be the machine's; the first crash it saw is first."""
    out = [ExitRecord(int(rec.fields["rank"]), None, None, None, int(rec.fields["exit_code"]), rec.source,
                      rec.line_no) for rec in records.get("composer_crash", ())]
    seen = {(e.source, e.rank) for e in out}
    for rec in records.get("composer_exit", ()):
        key = (rec.source, int(rec.fields["rank"]))
        if key not in seen:
            seen.add(key)
            out.append(ExitRecord(key[1], None, None, int(rec.fields["pid"]), int(rec.fields["exit_code"]),
                                  rec.source, rec.line_no, after_first=True))
    return out
