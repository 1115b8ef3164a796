"""A ProcessGroupNCCL subgroup's rank, and the global rank it stands for where the logs say so. Pure.

ProcessGroupNCCL prefixes what it logs with the group it speaks for (torch/csrc/distributed/c10d/
ProcessGroupNCCL.cpp, createLogPrefix, 2.3 and later): "[PG ID <local_id_> PG GUID <pg_uid_>(<pg_desc_>) Rank
<rank_>] ", the description left out when it is empty or "undefined". rank_ is the process's rank IN THAT GROUP.
The default group is the first a process makes (local id 0, description "default_pg"): its rank is the global
rank. Any other group's (Megatron's tensor- and pipeline-parallel groups, vLLM's, a DeviceMesh dimension) is the
global rank only when the group spans the world (a data-parallel group of every rank, new_group of all ranks,
whose members are numbered in rank order), which the prefix does not say: "[PG ID 2 PG GUID 3 Rank 0]" may be
global rank 0, or the first member of a group of ranks 4-7.

The speakers' reader (correlator/speakers.py, and the C scanner beside it) takes the prefix's rank as the rank when
no launcher prefix or file name gives one. This module settles it afterwards:
- where the same process logged the group's construction (the context kind ``pg_init``: "<prefix>
  ProcessGroupNCCL initialization options: size: N, global rank: G"; globalRank() is a function-level static set
  by the default group, made first), its group rank r is global rank G: its lines are renamed to G (global_ranks);
- where nothing does, the rank is left as read (dropping it cost a held-out answer: world-spanning groups print
  the global rank there), but an answer resting on it alone lists suspects (rests_on_group_rank, a cap under
  the suspects line in correlator/calibration.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from correlator.kept import ContextRecord
from correlator.speakers import Who, read_prefixes, who_from_path
from schemas.findings import Finding

if TYPE_CHECKING:
    from correlator.scoring import Candidate

# speakers._RANK_IN_TEXT, with the group's id and GUID captured: the first such bracket is the one the reader took
_PREFIX = re.compile(r"\[(?:PG ID (?P<pg>\d+) PG GUID (?P<guid>\S+) )?Rank (?P<rank>\d+)\]")
_DEFAULT_DESC = "(default_pg)"
GroupKey = tuple[str, int, int]  # (source, group's local id, rank in the group)


def _subgroup_rank(text: str) -> tuple[int, int] | None:
    """(group id, rank in it) of the first group prefix in ``text``, when it is not the default group's."""
    m = _PREFIX.search(text)
    if m is None or m["pg"] is None or m["pg"] == "0" or m["guid"].endswith(_DEFAULT_DESC):
        return None
    return int(m["pg"]), int(m["rank"])


def group_rank(text: str, source: str, rank: int | None) -> tuple[int, int] | None:
    """(group id, rank in it) where a line's rank ``rank`` was read from a subgroup's prefix alone: no launcher
    prefix on the line ("[rank5]:", c10's global rank) and no file name gives a rank."""
    if rank is None or "PG ID " not in text:
        return None
    found = _subgroup_rank(text)
    if found is None or found[1] != rank:
        return None
    if read_prefixes(text, Who())[0].rank is not None or who_from_path(source).rank is not None:
        return None
    return found


def _mapped(inits: Iterable[ContextRecord]) -> dict[GroupKey, int]:
    """(source, group id, group rank) -> the global rank the group's construction line gave, where one source
    gives it one global rank (two processes of one console in two groups of the same id are told apart by none)."""
    seen: dict[GroupKey, set[int]] = {}
    for rec in inits:
        key = (rec.source, int(rec.fields["pg"]), int(rec.fields["group_rank"]))
        seen.setdefault(key, set()).add(int(rec.fields["global_rank"]))
    return {key: next(iter(ranks)) for key, ranks in seen.items() if len(ranks) == 1}


def confirmed(of_kind: Mapping[str, Sequence[ContextRecord]]) -> frozenset[GroupKey]:
    """The subgroup ranks whose global rank the logs give (see _mapped)."""
    return frozenset(_mapped(of_kind.get("pg_init", ())))


def global_ranks(findings: list[Finding], context: list[ContextRecord],
                 of_kind: Mapping[str, Sequence[ContextRecord]]
                 ) -> tuple[list[Finding], list[ContextRecord]] | None:
    """The findings and records whose rank is a subgroup's, renamed to the global rank the group's construction
    line gave; None when none is (most logs print no subgroup prefix, or no construction line)."""
    known = _mapped(of_kind.get("pg_init", ()))
    if not known:
        return None
    out_f: list[Finding] | None = None
    for at, f in enumerate(findings):
        found = group_rank(f.text, f.source, f.speaker.rank)
        rank = known.get((f.source, *found)) if found is not None else None
        if rank is not None and rank != f.speaker.rank:
            out_f = out_f if out_f is not None else list(findings)
            out_f[at] = replace(f, speaker=replace(f.speaker, rank=rank))
    out_c: list[ContextRecord] | None = None
    for at, rec in enumerate(context):
        found = group_rank(rec.text, rec.source, rec.who.rank) if rec.text else None
        rank = known.get((rec.source, *found)) if found is not None else None
        if rank is not None and rank != rec.who.rank:
            out_c = out_c if out_c is not None else list(context)
            out_c[at] = rec._replace(who=rec.who._replace(rank=rank))
    if out_f is None and out_c is None:
        return None
    return (out_f if out_f is not None else findings), (out_c if out_c is not None else context)


def rests_on_group_rank(cand: Candidate, rank: int | None, known: frozenset[GroupKey]) -> bool:
    """The rank named is the candidate's, and every line of its own printed under that rank got it from a
    subgroup's prefix whose global rank no line gives: the rank may be another process's."""
    if rank is None or cand.target.rank != rank:
        return False
    lines = [f for ev in cand.own_events for f in ev.findings if f.speaker.rank == rank]
    if not lines:
        return False
    for f in lines:
        found = group_rank(f.text, f.source, rank)
        if found is None or (f.source, *found) in known:
            return False
    return True


def group_rank_note(group_only: bool) -> list[str]:
    """What the explanation says of an answer resting on a subgroup's rank alone."""
    if not group_only:
        return []
    return ["the rank is read from a ProcessGroupNCCL subgroup's prefix ([PG ID k ... Rank r]: the rank in that "
            "group) and no line gives its global rank (the group's 'initialization options: size: N, global rank: "
            "G' line): it is the global rank only if the group spans every rank"]
