"""Collective progress across ranks: who never joined the collective the others wait in, who ran another one.

Sequence numbers are immune to clock skew. The sources, each turned into evidence naming a rank:
- ProcessGroupNCCL's "last enqueued work: N, last completed work: M" (watchdog failures and dump signals): a rank
  that enqueued fewer collectives never joined the one the others wait in; one that enqueued as many but
  completed fewer is stuck inside an older one;
- Flight Recorder dumps (per process group: last enqueued collective, and each collective's op and sizes);
- watchdog timeouts (pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, WorkNCCL::checkTimeout:
  "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N, OpType=...)"): a rank timing out on an older
  SeqNum than everyone else, or in another OpType on the same one, and the rank of a job of known size that is
  absent from the ranks timing out in the collective all the others wait in (it printed nothing, its log is
  lost, or it is elsewhere): the straggler, even when no desync report names it.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from correlator.flight_recorder import FlightDump
from correlator.kept import ContextRecord
from schemas.findings import Finding

MIN_RANKS = 3  # below this "most ranks" means nothing
MAJORITY = 0.6
MAX_BEHIND = 8  # a rank stuck in an older collective is a few behind; far behind is another process group's count
ABSENT_SHARE = 0.02  # more absent ranks than this (and more than one) and absence is lost logs, not a straggler
_PG = re.compile(r"\[PG (?:ID )?(?P<pg>\d+)")  # the process group in ProcessGroupNCCL's logPrefix, when printed
# torchrun --log-dir files each restart's output under attempt_<restart count>/ (torch/distributed/elastic/
# multiprocessing/api.py, DefaultLogsSpecs.reify): a restart makes new process groups, whose SeqNums count from 0
# again, so one attempt's collective numbers are never compared with another's
_ATTEMPT_DIR = re.compile(r"(?:^|[/\\])attempt_(?P<n>\d+)[/\\]")

# (rank, seq, op, source, line, the line's finding) of a watchdog timeout: its text is read from the finding where a
# Lag cites it or its process group is looked for, one line at a time. A tuple holding every rank's text at once
# was the peak of a diagnosis (a packed watchdog text is rebuilt when read: 0.35 KB a rank; issue 23)
Timeout = tuple[int, int, str, str, int, Finding]


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


def attempt_of(source: str) -> int | None:
    """The torchrun restart a log file holds, where its path says (attempt_<n>/)."""
    found = _ATTEMPT_DIR.search(source) if "attempt_" in source else None
    return int(found["n"]) if found else None


def from_status(records: Sequence[ContextRecord], rank_of: Sequence[int | None]) -> list[Lag]:
    """Ranks whose last enqueued collective is older than the one most ranks were waiting in, and ranks that
    enqueued as many as most but completed fewer (stuck inside an older collective); within each restart."""
    by_attempt: dict[int | None, dict[int, ContextRecord]] = defaultdict(dict)
    for rec, rank in zip(records, rank_of, strict=True):  # ``rank_of``: each record's rank, by position
        if rec.kind != "pg_status" or rank is None:
            continue
        latest = by_attempt[attempt_of(rec.source)]
        if rank not in latest or int(rec.fields["enqueued"]) > int(latest[rank].fields["enqueued"]):
            latest[rank] = rec
    return [lag for latest in by_attempt.values() for lag in _status_lags(latest)]


def _status_lags(latest: dict[int, ContextRecord]) -> list[Lag]:
    """from_status within one restart: ``latest``, each rank's furthest progress line."""
    if len(latest) < MIN_RANKS:
        return []
    common = _majority([int(r.fields["enqueued"]) for r in latest.values()])
    if common is None:
        return []
    seq, count = int(common[0]), common[1]
    out = [Lag(rank, "status", f"its last enqueued collective is #{rec.fields['enqueued']} while {count} ranks "
               f"enqueued #{seq}: it never joined #{seq}", rec.source, rec.line_no, rec.text)
           for rank, rec in sorted(latest.items()) if int(rec.fields["enqueued"]) < seq]
    level = {r: rec for r, rec in latest.items() if int(rec.fields["enqueued"]) == seq}
    done = _majority([int(rec.fields["completed"]) for rec in level.values()])
    if done is None or len(level) < MIN_RANKS:
        return out
    finished = int(done[0])
    return out + [Lag(rank, "status", f"its last completed collective is #{rec.fields['completed']} while "
                      f"{done[1]} ranks completed #{finished}: it is stuck in #{int(rec.fields['completed']) + 1}",
                      rec.source, rec.line_no, rec.text)
                  for rank, rec in sorted(level.items())
                  if finished - MAX_BEHIND <= int(rec.fields["completed"]) < finished]


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


def _by_group(timeouts: Sequence[Timeout]) -> dict[tuple[int | None, str | None], dict[int, Timeout]]:
    """Each rank's first timeout in each process group (when the line names it; SeqNum counts per group) of each
    restart (attempt_of)."""
    groups: dict[tuple[int | None, str | None], dict[int, Timeout]] = defaultdict(dict)
    for item in timeouts:
        found = _PG.search(item[5].text)
        groups[(attempt_of(item[3]), found["pg"] if found else None)].setdefault(item[0], item)
    return groups


def from_ops(timeouts: Sequence[Timeout]) -> list[Lag]:
    """Watchdog timeouts: a rank timing out in another op than the rest."""
    by_seq: dict[tuple[int | None, int], dict[int, Timeout]] = defaultdict(dict)
    for item in timeouts:
        by_seq[(attempt_of(item[3]), item[1])].setdefault(item[0], item)
    out = []
    for (_, seq), ranks in by_seq.items():
        if len(ranks) < MIN_RANKS:
            continue
        common = _majority([item[2] for item in ranks.values()])
        if common is None:
            continue
        for rank, (_, _, op, source, line, finding) in sorted(ranks.items()):
            if op != common[0]:
                out.append(Lag(rank, "mismatch", f"it timed out in {op} #{seq} where {common[1]} ranks ran "
                               f"{common[0]} #{seq}: mismatched collectives", source, line, finding.text))
    return out


def from_timeouts(timeouts: Sequence[Timeout], world: int | None) -> list[Lag]:
    """A rank that timed out on an older SeqNum than the collective most ranks wait in (it never finished the
    one they had), and the ranks of the job absent from the timeouts of that collective."""
    out: list[Lag] = []
    for group in _by_group(timeouts).values():
        if len(group) < MIN_RANKS:
            continue
        common = _majority([seq for _, seq, *_ in group.values()])
        if common is None:
            continue
        seq, count = int(common[0]), common[1]
        for rank, (_, theirs, _, source, line, finding) in sorted(group.items()):
            if seq - MAX_BEHIND <= theirs < seq:
                out.append(Lag(rank, "status", f"it timed out in collective #{theirs} while {count} ranks waited in "
                               f"#{seq}: it never finished #{theirs}, which they had", source, line, finding.text))
        out += _absent(group, seq, count, world)
    return out


def _absent(group: dict[int, Timeout], seq: int, count: int, world: int | None) -> list[Lag]:
    """Ranks of the job (NCCL's nranks or the job's size; else the ranks below the highest that timed out) that
    did not time out at all while nearly every other rank waited in collective #seq."""
    size = world if world else max(group) + 1
    if count < MAJORITY * size:  # first: a size the ranks that timed out do not support allocates nothing
        return []
    # in order, as sorted() of the two sets' difference gave them, without a set of every rank of the job held twice
    absent = [rank for rank in range(size) if rank not in group]
    if not absent or len(absent) > max(1, ABSENT_SHARE * size):
        return []
    # cited at a line that exists: the lowest other rank's own timeout in #seq (an absence prints no line)
    _, _, _, source, line, finding = min((item for item in group.values() if item[1] == seq), key=lambda item: item[0])
    text = finding.text
    return [Lag(rank, "absent", f"it is absent from collective #{seq}: {count} of the job's {size} ranks timed out "
                f"waiting in it, this one did not", source, line, text) for rank in absent]
