"""torchrun's tee header under `--role rank`: "[rankN]:" numbering a node's own workers, not the job's. Pure.

torchrun prefixes each worker's lines with "[{role}{local_rank}]:" (torch/distributed/elastic/multiprocessing/
tail_log.py); with the default role that is "[default3]:", but launchers that pass `--role rank` (torchtitan's
run_train.sh) print "[rank3]:" — c10's own prefix for the global rank. Which one a source prints is read from
what else numbers its processes (NCCL's init lines, the failure table) and from whether one number is printed on
several hosts (a global rank is printed on one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from correlator.few import FewSets
from correlator.identity import METADATA, IdentityMap
from correlator.kept import ContextRecord
from correlator.speakers import Who
from schemas.findings import Finding


def role_rank_prefixes(pairs: Sequence[tuple[Who, str]], ids: IdentityMap) -> dict[str, set[int]]:
    """Sources whose "[rankN]:" prefix is torchrun's tee header under `--role rank` ("[{role}{local_rank}]:",
    torch/distributed/elastic/multiprocessing/tail_log.py; torchtitan's run_train.sh launches so): NCCL's init
    line numbers a process printing under "[rank0]:" rank 8, and none under it agrees. -> the global ranks of the
    source's processes (a c10 "[rank8]:" after the header is one of those, and stays). Or the source's failure
    table says local rank 4 is rank 28, "[rank4]:" speaks in it and "[rank28]:" does not."""
    agree: set[str] = set()
    disagree: dict[str, set[int]] = {}
    prefixed: FewSets[str, int] = FewSets()  # one value a source, almost always: no set each (correlator/few.py)
    hosts: FewSets[str, str] = FewSets()
    # what the failure tables' rows read below, kept for their sources alone: two maps of every source were a
    # peak of naming (0.14 KB a rank at 4,096 ranks; issue 23)
    tabled = {row.source for row in ids.exits}
    for who, source in pairs:
        if source in tabled:
            if who.host:
                hosts.add(source, who.host)
            if who.rank is not None and who.local_rank is None:
                prefixed.add(source, who.rank)
        if who.rank is None or who.local_rank is not None:
            continue
        if who.pid is None or who.host is None:
            continue
        numbered = ids.by_host_pid.get((who.host, who.pid))
        if numbered == who.rank:
            agree.add(source)
        elif numbered is not None and numbered > who.rank:  # a local rank is below its global one
            disagree.setdefault(source, set()).add(numbered)
    for row in ids.exits:
        seen = prefixed.get(row.source)
        if row.rank is None or row.local_rank is None or row.rank == row.local_rank or row.source == METADATA:
            continue
        if row.rank in seen and row.local_rank in seen:
            continue  # both under "[rankN]:": the header's local ranks, c10's global ones after it; NCCL decides
        if row.rank in seen:
            agree.add(row.source)
        elif row.local_rank in seen and row.rank > row.local_rank and hosts.get(row.source) <= {row.host}:
            disagree.setdefault(row.source, set()).add(row.rank)  # one node's console: its agent's table
    out = {source: ranks for source, ranks in disagree.items() if source not in agree}
    for source in _repeated_across_hosts(pairs):
        if source not in agree:
            out.setdefault(source, set())
    return out


def _repeated_across_hosts(pairs: Sequence[tuple[Who, str]]) -> set[str]:
    """Sources whose "[rankN]:" numbers other hosts print too: a global rank is one process on one host, so
    two numbers each printed on two hosts or more are each node's local ranks (every node's "[rank0]:" ...
    "[rank7]:"), on every source that prints them."""
    hosts_of: FewSets[int, str] = FewSets()  # one host a rank, almost always: no set each
    sources_of: FewSets[int, str] = FewSets()
    for who, source in pairs:
        if who.rank is None or who.local_rank is not None or who.pid is not None or who.host is None:
            continue
        hosts_of.add(who.rank, who.host)
        sources_of.add(who.rank, source)
    repeated = [rank for rank in hosts_of if hosts_of.count(rank) >= 2]
    if len(repeated) < 2:
        return set()
    return {source for rank in repeated for source in sources_of.get(rank)}


def as_local(findings: list[Finding], context: list[ContextRecord], role_named: Mapping[str, set[int]]
              ) -> tuple[list[Finding], list[ContextRecord]]:
    """The findings and records of ``role_named``'s sources with their prefix's number as the local rank."""
    def local(who: Who, source: str) -> Who:
        ranks = role_named.get(source)
        if ranks is None or who.rank is None or who.local_rank is not None or who.rank in ranks:
            return who
        return who._replace(rank=None, local_rank=who.rank)

    out_f = []
    for f in findings:
        s = f.speaker
        new = local(Who(s.rank, s.host, s.pid, s.device, s.local_rank), f.source)
        out_f.append(f if new.rank == s.rank else replace(f, speaker=replace(s, rank=None,
                                                                             local_rank=new.local_rank)))
    out_c = [rec if (who := local(rec.who, rec.source)) is rec.who else rec._replace(who=who) for rec in context]
    return out_f, out_c
