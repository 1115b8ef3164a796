"""No catalogued failure line at all: what is left to say. The lines one rank printed that no other did, or the
launcher's report of a process that exited with an error: an exit code names a rank even where none of its lines
says why (Open MPI's "The first process to do so was: Process name: [[j,1],N]", torchrun's failure table, srun's
task exits), which beats naming nobody. Either way the cause is unknown and the confidence says so. Pure."""

from __future__ import annotations

from collections.abc import Sized

from correlator.differential import differential
from correlator.failure_tables import ExitRecord
from correlator.headline import UNRECOGNISED, headline, message
from correlator.identity import IdentityMap
from correlator.kept import ContextRecord
from correlator.redact import evidence_text
from correlator.scoring import W_EXIT_TEARDOWN
from correlator.signals import CODE_SIGNALS
from schemas.diagnosis import Diagnosis, Evidence, RootCause, Suspect

# An exit code alone names who ended, not why: under the 0.5 line that lists suspects, above a guess from error lines
CONFIDENCE_EXIT_ONLY = 0.3


def nothing_matched(sources: Sized, context: list[ContextRecord], ids: IdentityMap) -> Diagnosis:
    suspect = differential(context)
    exited = _the_one_exit(ids)
    if exited is not None and (suspect is None or suspect.rank is None):
        return _exit_only(exited, ids)
    if suspect is None:
        return Diagnosis(verdict="no_failure_found", root_cause=None)
    rank = suspect.rank if suspect.rank is not None else ids.rank_of(suspect.host, None)
    why = ("its error lines appear on no other rank or host" if suspect.unique
           else "it is the only source of error lines" if len(sources) == 1 else "its error lines come first")
    evidence = [Evidence(source=r.source, line=r.line_no, text=evidence_text(r.text)) for r in suspect.lines]
    said = message(evidence)
    return _listed(Diagnosis(
        verdict="no_known_signature",
        root_cause=RootCause(
            signature=None, title=headline(UNRECOGNISED, said), category="other", tags=[],
            rank=rank, host=suspect.host, confidence=0.2 if suspect.unique else 0.1,
            time=suspect.lines[0].time if suspect.lines else None, evidence=evidence,
            explanation=["no catalog entry matches these logs", f"suspect chosen because {why}"], message=said,
        ),
    ))


def _listed(d: Diagnosis) -> Diagnosis:
    """Under calibration's suspects line (every answer here is), a rank or host named is a suspect, listed as one,
    so that every reader says "likely", as it does for a ranked list (calibration.honest)."""
    rc = d.root_cause
    if rc is not None and (rc.rank is not None or rc.host is not None):
        d.suspects = [Suspect(rank=rc.rank, host=rc.host, signature=rc.signature, confidence=rc.confidence,
                              evidence=rc.evidence[:3], reasons=rc.explanation[1:2])]
    return d


def _the_one_exit(ids: IdentityMap) -> ExitRecord | None:
    """The one rank the exit reports name as having failed (not torn down after another's failure), or None when
    they name several: which of them ended first is then not known. Where none names a rank, the one node they
    name (pdsh's per-node report: correlator/launcher_reports.py)."""
    failed = [e for e in ids.exits if e.exit_code != 0 and e.exit_code not in W_EXIT_TEARDOWN and not e.after_first]
    by_rank = [e for e in failed if e.rank is not None]
    named = by_rank or [e for e in failed if e.host is not None]
    return named[0] if named and len({e.rank if by_rank else e.host for e in named}) == 1 else None


def _exit_only(exited: ExitRecord, ids: IdentityMap) -> Diagnosis:
    rank = exited.rank
    host = exited.host or (ids.host_of_rank.get(rank) if rank is not None else None)
    who = f"rank {rank}" if rank is not None else f"node {host}"  # _the_one_exit keeps exits that name either
    signal = CODE_SIGNALS.get(exited.exit_code)  # how it ended, where the code says (a SIGKILL, a segfault)
    return _listed(Diagnosis(
        verdict="no_known_signature",
        root_cause=RootCause(
            signature=None, title=f"Cause unknown: only an exit code speaks{f' ({signal.upper()})' if signal else ''}",
            category="launcher", tags=["exit_code", *([signal] if signal else [])], rank=rank, host=host,
            confidence=CONFIDENCE_EXIT_ONLY, time=None,
            evidence=[Evidence(source=exited.source, line=exited.line_no,
                               text=f"{who} exited with code {exited.exit_code}")],
            explanation=[f"no catalog entry matches these logs; the launcher reports that {who} exited "
                         f"with code {exited.exit_code}, and no line of its own says why",
                         f"read {who}'s own output (and dmesg on its node for a negative code or 128 + signal)"],
        ),
    ))
