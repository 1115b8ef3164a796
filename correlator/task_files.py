"""One process per Slurm task file: the file's task index is its rank. Pure.

srun --output (or sbatch's) names each file by a pattern (SchedMD/slurm doc/man/man1/srun.1, "filename pattern"):
%j the job id, %t the task id relative to the step (SLURM_PROCID), %n the node id relative to the job, %N the
host, %x the job's name. "logs/%x-%j-%t.out" writes logs/moe-8x-6233227-11.out for task 11, and "%x-%j-%n.out"
one file a node. The name alone does not say which index it is; the content does. A file that shows one process
(no launcher of its own numbering workers, no local-rank prefixes, at most one NCCL process, no rank printed but
its index) is one task's, and srun starting one process per rank makes that task id the rank; with one task per
node, %n and %t number the same processes. A file showing a node's several workers (torchrun or DeepSpeed
under srun: %t is then the node's launcher) is left alone, as is a job's whole output (no index after the id).
An array job's files are "%A_%a" (the array job's id, an underscore, the array index: sbatch's default
slurm-%A_%a.out): each a job of its own, so an index after an underscore is never read as a task's.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import chain, compress, repeat, tee
from operator import contains, itemgetter

from correlator.kept import ContextRecord
from correlator.speakers import Who
from schemas.findings import Finding

# <name>-<job id>-<index>.<ext>: the index after the job id, as correlator.speakers' _JOB_ID_TAIL reads it
_TASK_FILE = re.compile(r"^(?P<group>.*[-_.]\d{5,})-(?P<index>\d{1,5})(?:\.[A-Za-z]\w*)*$")
_SOURCE_OF_PAIR = itemgetter(1)
# records and findings only a launcher of several workers prints: its file is a node's, not one task's
_LAUNCHER_KINDS = frozenset({"worker_failed", "worker_sigterm", "rdzv_group_rank", "rdzv_local_ranks",
                             "rdzv_global_ranks", "launch_nproc", "table_rank", "ds_node", "ds_spawned",
                             "ds_killing"})
_LAUNCHER_SIGNATURES = ("torchrun.", "deepspeed.launcher", "pytorch.mp.spawn", "accelerate.")


def _numbered(sources: Iterable[str]) -> dict[str, int]:
    """source -> its task index, for files of one job (one folder, name and job id) numbered at least twice.
    ``sources`` may repeat one: no set of every path is made (a string a file, a peak of naming at scale)."""
    groups: dict[str, dict[str, int]] = defaultdict(dict)
    # a name without "-" has no index after a job id: most paths (rank7.log) are passed over in C
    named, tested = tee(sources)
    for source in compress(named, map(contains, tested, repeat("-"))):
        if not source[-1:].isalnum() or not any(c.isdigit() for c in source[-12:]):
            continue  # most paths: no digit near their end, no regex
        m = _TASK_FILE.match(source)
        if m:
            groups[m["group"]][source] = int(m["index"])
    out: dict[str, int] = {}
    for files in groups.values():
        if len(files) >= 2 and len(set(files.values())) == len(files):
            out.update(files)
    return out


def task_file_ranks(pairs: Sequence[tuple[Who, str]], findings: list[Finding], context: list[ContextRecord],
                    sources: Sequence[str] = ()) -> tuple[list[Finding], list[ContextRecord]] | None:
    """The findings and records with each one-process task file's lines under its index as their rank; None when
    no source is such a file, or any of them shows several processes or a launcher (its files are nodes')."""
    index_of = _numbered(chain(sources, map(_SOURCE_OF_PAIR, pairs)))
    if not index_of:
        return None
    processes: dict[str, set[tuple[str | None, int]]] = defaultdict(set)
    for who, source in pairs:
        if source not in index_of:
            continue
        if who.local_rank is not None or (who.rank is not None and who.rank != index_of[source]):
            return None  # a node's workers, or a numbering the file's own lines contradict
        if who.pid is not None:
            processes[source].add((who.host, who.pid))
    if any(len(procs) > 1 for procs in processes.values()):
        return None
    if any(rec.source in index_of and rec.kind in _LAUNCHER_KINDS for rec in context) or any(
            f.source in index_of and f.signature.startswith(_LAUNCHER_SIGNATURES) for f in findings):
        return None

    return under_source_ranks(findings, context, index_of)


def under_source_ranks(findings: list[Finding], context: list[ContextRecord], rank_of: Mapping[str, int]
                       ) -> tuple[list[Finding], list[ContextRecord]]:
    """The findings and records of ``rank_of``'s sources that name no rank, under the rank their source's name
    gives (a pod's replica index, a Slurm task file's index)."""
    def ranked(who: Who, source: str) -> Who:
        rank = rank_of.get(source) if who.rank is None else None
        return who if rank is None else who._replace(rank=rank)

    out_f = []
    for f in findings:
        rank = rank_of.get(f.source) if f.speaker.rank is None else None
        out_f.append(f if rank is None else replace(f, speaker=replace(f.speaker, rank=rank)))
    out_c = [rec if (who := ranked(rec.who, rec.source)) is rec.who else rec._replace(who=who) for rec in context]
    return out_f, out_c
