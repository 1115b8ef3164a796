"""srun's label over a per-node launcher numbers the node's agent, not a rank. Pure.

`srun --label` prefixes every line with the id of the task that printed it (SchedMD/slurm src/srun/srun.c and
the "-l, --label" entry of srun(1): "Prepend task number to lines of stdout/err"). With one task per rank the id
is the global rank; with one task per node running torchrun or `accelerate launch` (which spawn that node's
workers) it is the node's index, and the agent's failure table (torch/distributed/elastic/multiprocessing/errors)
names the ranks: a worker's own line under such a label ("0: RuntimeError: CUDA error: ...") says which node,
not which rank. exits.py reads srun's exit lines under torchrun the same way (an srun task is a node's launcher).

A source is read so when torchrun's tables in it number ranks with their local ranks (an agent spoke there) and
its lines carry srun labels: a speaker whose rank came from the label alone loses it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from correlator.failure_tables import ExitRecord
from correlator.identity import METADATA
from correlator.kept import ContextRecord
from correlator.sieve import KIND, SOURCE, having, replaced, where
from correlator.speakers import Who, read_prefixes
from schemas.findings import Finding

_TABLE_HOST = frozenset({"table_host"})
_SRUN_LABEL = re.compile(r"\[?(?P<task>\d{1,5})\]?: ")  # speakers.py's "srun" prefix


def agent_sources(rows: Iterable[ExitRecord]) -> set[str]:
    """Sources where a torchrun agent's failure table numbers a worker by its rank and its local rank."""
    return {row.source for row in rows
            if row.source != METADATA and row.rank is not None and row.local_rank is not None}


def _label_only(text: str, rank: int) -> bool:
    """``text`` starts with srun's label for ``rank`` and nothing after it names a rank or a local rank."""
    m = _SRUN_LABEL.match(text)
    if m is None or int(m["task"]) != rank:
        return False
    after, _ = read_prefixes(text[m.end():], Who())
    # a worker's own prefix after the label ("0: [default3]:") is read by the local-rank rules, which know the
    # label is a node's (naming._srun_multi_node_sources)
    return after.rank is None and after.local_rank is None


def _task_hosts(context: list[ContextRecord], sources: set[str]) -> dict[tuple[str, int], str]:
    """(source, srun task) -> the host its agent's failure table names ("0:   host      : node17"), where one is."""
    named: dict[tuple[str, int], set[str]] = {}
    for rec in having(context, KIND, _TABLE_HOST):  # picked in C: a few a node among every rank's records
        if rec.source in sources and rec.who.rank is not None:
            named.setdefault((rec.source, rec.who.rank), set()).add(str(rec.fields["host"]))
    return {key: next(iter(hosts)) for key, hosts in named.items() if len(hosts) == 1}


def as_agents(findings: list[Finding], context: list[ContextRecord], sources: set[str]
              ) -> tuple[list[Finding], list[ContextRecord]] | None:
    """The findings and records of ``sources`` with the node's host (as its agent's table names it) for the rank
    srun's label alone gave them; None if none had one. Only the lines of ``sources`` are read (picked in C: the
    agents' own files, where every rank's lines were looked at)."""
    if not sources:
        return None
    hosts = _task_hosts(context, sources)

    def finding(f: Finding) -> Finding:
        s = f.speaker
        if s.rank is not None and _label_only(f.text, s.rank):
            return replace(f, speaker=replace(s, rank=None, host=s.host or hosts.get((f.source, s.rank))))
        return f

    def record(rec: ContextRecord) -> ContextRecord:
        who = rec.who
        if who.rank is not None and rec.text and _label_only(rec.text, who.rank):
            return rec._replace(who=who._replace(rank=None, host=who.host or hosts.get((rec.source, who.rank))))
        return rec

    out_f = replaced(findings, where(findings, SOURCE, sources), finding)
    out_c = replaced(context, where(context, SOURCE, sources), record)
    if out_f is None and out_c is None:
        return None
    return (findings if out_f is None else out_f), (context if out_c is None else out_c)
