"""One process per pod: the pod's replica index is its rank. Pure.

A pod's log file is named after the pod (correlator.speakers.who_from_path: a host, not a rank), because under
torchrun a pod is a node with several workers. When no pod of the job shows more than one process (no rank or
local-rank prefixes, at most one NCCL process), each pod runs one rank, and the operator numbers them: Kubeflow's
PyTorchJob gives the master pod rank 0 and worker i rank i + 1 (training-operator pkg/controller.v1/pytorch/
envvar.go: `rank = rank + 1` for workers when a master replica exists); an indexed Job or a JobSet's pod its
completion index, which the pod name ends with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import chain

from correlator.kept import ContextRecord
from correlator.speakers import Who, who_from_path
from correlator.task_files import task_file_ranks, under_source_ranks
from schemas.findings import Finding

_POD_INDEX = re.compile(r"-(?P<role>master|worker)-(?P<index>\d{1,5})$", re.I)
_POD_WORD = re.compile(r"-(?:master|worker)-\d", re.I)  # what a path holds wherever its host matches _POD_INDEX


def file_ranks(pairs: Sequence[tuple[Who, str]], findings: list[Finding], context: list[ContextRecord],
               sources: Sequence[str] = ()) -> tuple[list[Finding], list[ContextRecord]] | None:
    """Each one-process file's lines under the rank its name numbers: a pod's replica index, else a Slurm task
    file's index (correlator/task_files.py); None where neither applies."""
    return (pod_ranks(pairs, findings, context, sources)
            or task_file_ranks(pairs, findings, context, sources))


def pod_ranks(pairs: Sequence[tuple[Who, str]], findings: list[Finding], context: list[ContextRecord],
              sources: Sequence[str] = ()) -> tuple[list[Finding], list[ContextRecord]] | None:
    """The findings and records with each single-process pod's lines under its rank; None when no source is a pod,
    some pod runs several processes (its pods are nodes) or prints a rank its name does not give. ``sources``:
    every source read (a pod whose log matched nothing still says whether the job has a master)."""
    pods: dict[str, tuple[str, str, int]] = {}  # source -> (pod, role, index): its log, its description
    # every source read, then those the pairs name, each once: a set of them all (a string a file) was a peak of
    # naming (0.16 KB a rank at 4,096 ranks; issue 23); a source's pod is read from its path alone, in any order
    for source in chain(sources, (source for _, source in pairs)):
        if source in pods or not _POD_WORD.search(source):  # a path's host is part of it: no pod's name there,
            continue  # no pod (and no reading of every path again: a second per 100,000 files)
        host = who_from_path(source).host
        m = _POD_INDEX.search(host or "")
        if host and m:
            pods[source] = (host, m["role"].lower(), int(m["index"]))
    if not pods:
        return None
    shift = 1 if any(role == "master" for _, role, _ in pods.values()) else 0
    by_pod = {pod: index if role == "master" else index + shift for pod, role, index in pods.values()}
    if len(set(by_pod.values())) != len(by_pod):
        return None  # two pods one rank: the names are not a numbering
    processes: dict[str, set[tuple[str | None, int]]] = {}
    printed: dict[str, set[int]] = {}  # pod -> the ranks its lines print (c10's "[rank3]:")
    for who, source in pairs:
        if source not in pods:
            continue
        if who.local_rank is not None:
            return None  # a node's workers: its pods are nodes
        if who.rank is not None:
            printed.setdefault(pods[source][0], set()).add(who.rank)
        if who.pid is not None:
            processes.setdefault(source, set()).add((who.host, who.pid))
    if any(len(procs) > 1 for procs in processes.values()):
        return None
    # Ranks the lines print are read from them; the names number the rest (a pod evicted before it printed one)
    # only where every pod that prints its rank prints its index's.
    if any(ranks != {by_pod[pod]} for pod, ranks in printed.items()):
        return None
    rank_of = {source: by_pod[pod] for source, (pod, _, _) in pods.items()}

    return under_source_ranks(findings, context, rank_of)

