"""Collective progress across ranks: who never joined the collective the others wait in, who ran another one.

Sequence numbers are immune to clock skew. Three sources, each turned into evidence naming a rank:
- ProcessGroupNCCL's "last enqueued work: N, last completed work: M" (watchdog failures and dump signals);
- Flight Recorder dumps (per process group: last enqueued collective, and each collective's op and sizes);
- watchdog timeouts whose OpType differs from everyone else's on the same sequence number.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from correlator.flight_recorder import FlightDump
from correlator.kept import ContextRecord

MIN_RANKS = 3  # below this "most ranks" means nothing
MAJORITY = 0.6


@dataclass(frozen=True)
class Lag:
    """A rank the collective sequence numbers single out, with the line or dump that shows it."""

    rank: int
    kind: str  # "status" | "flight_recorder" | "mismatch"
    reason: str
    source: str
    line_no: int
    text: str


def _majority(values: Sequence[int | str]) -> tuple[int | str, int] | None:
    if not values:
        return None
    value, count = Counter(values).most_common(1)[0]
    return (value, count) if count >= MAJORITY * len(values) else None


def from_status(records: Sequence[ContextRecord], rank_of: dict[int, int | None]) -> list[Lag]:
    """Ranks whose last enqueued collective is older than the one most ranks were waiting in."""
    latest: dict[int, ContextRecord] = {}
    for index, rec in enumerate(records):
        rank = rank_of.get(index)
        if rec.kind != "pg_status" or rank is None:
            continue
        if rank not in latest or int(rec.fields["enqueued"]) > int(latest[rank].fields["enqueued"]):
            latest[rank] = rec
    if len(latest) < MIN_RANKS:
        return []
    common = _majority([int(r.fields["enqueued"]) for r in latest.values()])
    if common is None:
        return []
    seq, count = int(common[0]), common[1]
    return [Lag(rank, "status", f"its last enqueued collective is #{rec.fields['enqueued']} while {count} ranks "
                f"enqueued #{seq}: it never joined #{seq}", rec.source, rec.line_no, rec.text)
            for rank, rec in sorted(latest.items()) if int(rec.fields["enqueued"]) < seq]


def from_dumps(dumps: Sequence[FlightDump]) -> list[Lag]:
    """What fr_trace reports: ranks missing from a collective, and ranks running a different one."""
    by_rank = {d.rank: d for d in dumps if d.rank is not None}
    if len(by_rank) < MIN_RANKS:
        return []
    out: list[Lag] = []
    for pg in sorted({pg for d in by_rank.values() for pg in d.last_enqueued}):
        enqueued = {r: d.last_enqueued[pg] for r, d in by_rank.items() if pg in d.last_enqueued}
        top = max(enqueued.values())
        joined = [r for r, s in enqueued.items() if s == top]
        for rank, seq in sorted(enqueued.items()):
            if seq < top:
                d = by_rank[rank]
                out.append(Lag(rank, "flight_recorder", f"Flight Recorder: not all ranks joined collective #{top} of "
                               f"process group {pg}; this rank's last is #{seq} ({len(joined)} ranks joined)",
                               d.source, 0, f"last_enqueued_collective={seq} (pg {pg})"))
        out += _mismatched(by_rank, pg, top)
    return out


def _mismatched(by_rank: dict[int, FlightDump], pg: str, seq: int) -> list[Lag]:
    entries = {r: e for r, d in by_rank.items() if (e := d.entry(pg, seq)) is not None}
    shapes = {r: f"{e.op} {e.sizes}" for r, e in entries.items()}
    common = _majority(list(shapes.values()))
    if common is None or len(set(shapes.values())) < 2:
        return []
    return [Lag(r, "mismatch", f"Flight Recorder: collective #{seq} of process group {pg} is {entries[r].op} "
                f"{entries[r].sizes} here and {common[0]} on {common[1]} ranks", by_rank[r].source, 0,
                f"collective_seq_id={seq} profiling_name={entries[r].op}")
            for r, shape in sorted(shapes.items()) if shape != common[0]]


def from_ops(timeouts: Sequence[tuple[int, int, str, str, int, str]]) -> list[Lag]:
    """(rank, seq, op, source, line, text) of watchdog timeouts: a rank timing out in another op than the rest."""
    by_seq: dict[int, dict[int, tuple[str, str, int, str]]] = defaultdict(dict)
    for rank, seq, op, source, line, text in timeouts:
        by_seq[seq].setdefault(rank, (op, source, line, text))
    out = []
    for seq, ranks in by_seq.items():
        if len(ranks) < MIN_RANKS:
            continue
        common = _majority([op for op, *_ in ranks.values()])
        if common is None:
            continue
        for rank, (op, source, line, text) in sorted(ranks.items()):
            if op != common[0]:
                out.append(Lag(rank, "mismatch", f"it timed out in {op} #{seq} where {common[1]} ranks ran "
                               f"{common[0]} #{seq}: mismatched collectives", source, line, text))
    return out
