"""MPICH Hydra's `mpiexec -l` label: "[R] " before each line of process R's output. Pure.

Hydra's `-l` / `-prepend-rank` sets the prepend pattern to "[%r] " (pmodels/mpich src/pm/hydra, ui/mpich/utils.c,
prepend_rank_fn: HYDU_set_str(arg, &HYD_ui_info.prepend_pattern, "[%r] ")), %r being the process's rank in
MPI_COMM_WORLD: under mpiexec, torch.distributed's global rank. A bracketed number at a line's start is common
elsewhere (a shell's job number, a list's index, NCCL's device after its header), so it is read as a rank only in a
source whose head (its first 64 KiB, read by the scanner) carries it on three lines in four or more, under several
ranks: the shape of Hydra's output file, where every process line is labelled and only mpiexec's and the
scheduler's own lines are not. The label is read after the scan (naming.settle) for a speaker that names no rank.
"""

from __future__ import annotations

import re
from dataclasses import replace

from correlator.kept import ContextRecord
from correlator.speakers import Who
from schemas.findings import Finding

_LABEL = re.compile(r"\[(?P<rank>\d{1,5})\] ")
# "^" under re.M is tried at every byte (sre has no newline skip: 13 ns a byte, 145 us an 11 KB head); a label after
# "\n" is found by sre's literal-prefix search instead (20x faster), the first line's by match: the same labels.
_FIRST_LABEL = re.compile(rb"\[(\d{1,5})\] ")
_NEXT_LABELS = re.compile(rb"\n\[(\d{1,5})\] ")
_HEAD_BYTES = 1 << 16  # a source's head, read once: what it shows its first lines
_MIN_SHARE = 0.75  # of the head's lines that carry the label (mpiexec's and the scheduler's own lines do not)
_MIN_RANKS = 2  # distinct labels in it: one repeated number is an index, not a launcher's rank column
KIND = "hydra_labelled"  # the context record that marks a source so labelled


def hydra_labelled(head: bytes) -> bool:
    """Whether a source's first chunk is labelled throughout as `mpiexec -l` labels it, under several ranks."""
    lines = head.count(b"\n", 0, _HEAD_BYTES) or 1
    # Every label starts a line with "[": counted in C first, so the regex reads only a head that may be Hydra's
    # (every rank file of a large job passes here, and rg's speed is the bar: issue 23).
    if head.count(b"\n[", 0, _HEAD_BYTES) + head.startswith(b"[") < _MIN_SHARE * lines:
        return False
    head = head[:_HEAD_BYTES]
    labels = _NEXT_LABELS.findall(head)
    if first := _FIRST_LABEL.match(head):
        labels.append(first[1])
    return len(labels) >= _MIN_SHARE * lines and len(set(labels)) >= _MIN_RANKS


def labelled_record(source: str) -> ContextRecord:
    return ContextRecord(KIND, {}, source, 0, Who(), None)


def _label(text: str | None) -> int | None:
    m = _LABEL.match(text) if text else None
    return int(m["rank"]) if m else None


def labelled_sources(context: list[ContextRecord]) -> set[str]:
    """Sources whose head the scanner found labelled by Hydra throughout."""
    return {rec.source for rec in context if rec.kind == KIND}


def as_labelled(findings: list[Finding], context: list[ContextRecord]
                ) -> tuple[list[Finding], list[ContextRecord]] | None:
    """The findings and records of Hydra-labelled sources with the label's rank for a speaker that had none;
    None if none changed."""
    sources = labelled_sources(context)
    if not sources:
        return None
    changed = False
    out_f = []
    for f in findings:
        if f.source in sources and f.speaker.rank is None and (rank := _label(f.text)) is not None:
            f = replace(f, speaker=replace(f.speaker, rank=rank))
            changed = True
        out_f.append(f)
    out_c = []
    for rec in context:
        if rec.source in sources and rec.who.rank is None and (rank := _label(rec.text)) is not None:
            rec = rec._replace(who=rec.who._replace(rank=rank))
            changed = True
        out_c.append(rec)
    return (out_f, out_c) if changed else None
