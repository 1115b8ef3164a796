"""What a diagnosis lets go of, and when (issue 23: memory per rank). Pure.

A one-shot diagnosis (the CLI's) holds every rank's findings and records at its peak, so what a step is done with
is freed as it goes: the scan's per-source lists once read (when the caller hands the results over), and the
records of each kind once the last step that reads them has run. Nothing a later step reads is dropped.

What the steps after gathering read of the results themselves (each source's name, whether it had lines, the
structured files found, how many sources) is kept as ``Read``: columns, not a SourceResult a file. A handed-over
list of results is emptied once read: its objects (a SourceResult and its two counts, 0.18 KB a file) were held
to the diagnosis's end for those four facts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import compress

from correlator.kept import ContextRecord
from correlator.reading import SourceResult
from correlator.structured import Structured
from schemas.findings import Finding


class Read:
    """What the steps after gathering read of the sources: their names in input order, which had lines, the
    structured files (a Flight Recorder dump, the job's metadata) in input order, and how many there were."""

    __slots__ = ("lined", "names", "structured")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.lined = bytearray()  # 1 where the source had lines
        self.structured: list[Structured] = []

    def __len__(self) -> int:
        return len(self.names)

    def with_lines(self) -> Iterator[str]:
        """The names of the sources that had lines (a file of no lines names no rank)."""
        return compress(self.names, self.lined)


def gathered(results: Sequence[SourceResult], release: bool) -> tuple[list[Finding], list[ContextRecord], Read]:
    """Every source's findings and records, in input order, and what later steps read of the sources. With
    ``release``, each source's two lists are deleted once read (0.27 KB a rank) and a list of results is emptied."""
    findings: list[Finding] = []
    context: list[ContextRecord] = []
    read = Read()
    for r in results:
        findings += r.findings
        context += r.context
        read.names.append(r.source)
        read.lined.append(1 if r.lines else 0)
        read.structured += r.structured
        if release:
            del r.findings, r.context
    if release and isinstance(results, list):
        results.clear()
    return findings, context, read


def let_go(of_kind: dict[str, list[ContextRecord]], *kinds: str) -> None:
    """Drop the records of ``kinds``, which no later step reads: once the results are released, nothing else
    holds them (a rank's init, `Using`, work status and error lines: 5.5 records a rank at 8,192 ranks)."""
    for kind in kinds:
        of_kind.pop(kind, None)
