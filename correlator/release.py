"""What a diagnosis lets go of, and when (issue 23: memory per rank). Pure.

A one-shot diagnosis (the CLI's) holds every rank's findings and records at its peak, so what a step is done with
is freed as it goes: the scan's per-source lists once read (when the caller hands the results over), and the
records of each kind once the last step that reads them has run. Nothing a later step reads is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from correlator.kept import ContextRecord
from correlator.reading import SourceResult
from schemas.findings import Finding


def gathered(results: Sequence[SourceResult], release: bool) -> tuple[list[Finding], list[ContextRecord]]:
    """Every source's findings and records, in input order. With ``release``, each source's two lists are deleted
    once read (0.27 KB a rank): only its source, lines, bytes and structured are read afterwards."""
    findings: list[Finding] = []
    context: list[ContextRecord] = []
    for r in results:
        findings += r.findings
        context += r.context
        if release:
            del r.findings, r.context
    return findings, context


def let_go(of_kind: dict[str, list[ContextRecord]], *kinds: str) -> None:
    """Drop the records of ``kinds``, which no later step reads: once the results are released, nothing else
    holds them (a rank's init, `Using`, work status and error lines: 5.5 records a rank at 8,192 ranks)."""
    for kind in kinds:
        of_kind.pop(kind, None)
