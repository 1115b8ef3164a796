"""One file a Slurm task: srun's output pattern numbers each file by its task, the rank. Pure.

srun writes each task's output to a file of its own when the --output (-o) filename pattern holds %t, "task
identifier (rank) relative to current job" (srun(1), IO Redirection; SchedMD/slurm src/common/fname.c): with
`srun --output=logs/%x-%j-%t.out python train.py`, task 13's lines are in logs/<job name>-<job id>-13.out. A
number between the percent and the letter zero-pads it (%4t: 0013). Where srun starts the training processes
themselves, the task id is SLURM_PROCID, the rank every launcher-less framework reads (Lightning's SLURMEnvironment,
Megatron's and NeMo's Slurm setup, JAX's slurm_cluster); where it starts a launcher (torchrun, accelerate,
deepspeed), each task is a node's launcher and its workers' ranks are their own: the file names no rank then.

The pattern is read from the job's own script (the sbatch file among the logs), the srun line that carries it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from correlator.kept import ContextRecord
from correlator.speakers import Who
from correlator.task_files import under_source_ranks
from schemas.findings import Finding

# srun starting a launcher, not the ranks: each task is a node's agent
_LAUNCHER = re.compile(r"\b(?:torchrun|torch\.distributed\.(?:run|launch)|accelerate|deepspeed|mpirun|horovodrun)\b")
# src/common/fname.c's specifiers: %t the task, digits for the numeric ones, anything up to a slash for the rest
_SPEC = re.compile(r"%(?P<pad>\d*)(?P<letter>[A-Za-z%])")
_NUMERIC = frozenset("jJsnaAt")


def _as_regex(pattern: str) -> re.Pattern[str] | None:
    """The file names srun writes for ``pattern`` (its last path part), the task captured; None without %t."""
    name = pattern.rsplit("/", 1)[-1]
    out, at, tasks = [], 0, 0
    for m in _SPEC.finditer(name):
        out.append(re.escape(name[at:m.start()]))
        letter = m["letter"]
        if letter == "%":
            out.append("%")
        elif letter == "t":
            out.append(r"(?P<task>\d+)" if tasks == 0 else r"\d+")
            tasks += 1
        elif letter == "J":
            out.append(r"\d+(?:\.\d+)?")
        else:
            out.append(r"\d+" if letter in _NUMERIC else r"[^/]+?")
        at = m.end()
    out.append(re.escape(name[at:]))
    return re.compile("(?:^|/)" + "".join(out) + "$") if tasks else None


def task_of_file(patterns: Iterable[str], sources: Iterable[str]) -> dict[str, int]:
    """source -> the task its name gives, for the sources a %t pattern names; empty where two files would be one
    task's (the pattern then is not what named them)."""
    regexes = [rx for p in patterns if (rx := _as_regex(p)) is not None]
    found: dict[str, int] = {}
    for source in sources:
        for rx in regexes:
            if m := rx.search(source):
                found[source] = int(m["task"])
                break
    return found if len(set(found.values())) == len(found) else {}


def starts_launchers(of_kind: Mapping[str, Sequence[ContextRecord]]) -> bool:
    """The job's script has srun start a launcher (torchrun, accelerate, ...) with a per-task output pattern: its
    files are nodes' consoles, whatever one of them seems to show."""
    return any(_LAUNCHER.search(str(rec.fields.get("rest") or "")) for rec in of_kind.get("srun_output", ()))


def _patterns(of_kind: Mapping[str, Sequence[ContextRecord]]) -> list[str]:
    """The %t patterns of srun lines that start the training processes themselves."""
    return [str(rec.fields["pattern"]) for rec in of_kind.get("srun_output", ())
            if not _LAUNCHER.search(str(rec.fields.get("rest") or ""))]


def task_file_ranks(pairs: Sequence[tuple[Who, str]], findings: list[Finding], context: list[ContextRecord],
                    of_kind: Mapping[str, Sequence[ContextRecord]], sources: Sequence[str] = ()
                    ) -> tuple[list[Finding], list[ContextRecord]] | None:
    """The findings and records of each task's file under its rank, where no line of it prints another; None where
    no srun pattern names a file, or a file's lines print a rank or local rank of their own."""
    patterns = _patterns(of_kind)
    if not patterns:
        return None
    rank_of = task_of_file(patterns, dict.fromkeys([*sources, *(source for _, source in pairs)]))
    if not rank_of:
        return None
    for who, source in pairs:
        task = rank_of.get(source)
        if task is not None and (who.local_rank is not None or who.rank not in (None, task)):
            return None  # its lines say who printed them, and it is not the task: the names are not ranks

    return under_source_ranks(findings, context, rank_of)
