"""The line that ends the whole job and names no process, where there is one. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from catalog.model import Implicates, Scope
from correlator.event import Event
from correlator.exits import cause_like
from schemas.findings import Role

SIGNAL_RECEIVED = "sigterm"  # the catalog's tag for a process's report that it received SIGTERM
SAME_REPORT = 3  # lines: a consequence listed this close after a stop is part of one report with it


def job_cause(failures: Sequence[Event]) -> Event | None:
    """The first line that ends the whole job and names no process (the scheduler's time limit, a preemption):
    what the exit reports of every process follow from."""
    causes = [ev for ev in failures if ev.signature.scope is Scope.JOB and ev.signature.implicates is
              Implicates.NONE and cause_like(ev)]
    if any(SIGNAL_RECEIVED in ev.signature.tags for ev in causes):
        causes = [ev for ev in causes if not _teardown_signal(ev, _first_collateral_lines(failures))]
    return min(causes, key=lambda ev: ev.best.order) if causes else None


def _first_collateral_lines(failures: Sequence[Event]) -> dict[str, int]:
    first: dict[str, int] = {}
    for ev in failures:
        if ev.role is Role.COLLATERAL and not ev.stale:
            first[ev.best.source] = min(first.get(ev.best.source, ev.best.line_no), ev.best.line_no)
    return first


def _teardown_signal(ev: Event, first_collateral: Mapping[str, int]) -> bool:
    """A process's own report that it received SIGTERM names no sender: printed in its output after a failure's
    consequences had begun there (a watchdog timeout, a peer's reset), it is the launcher tearing the failed job
    down (srun's, torchrun's or Lightning's forwarding of the signal), not a stop from outside. So is a pod's
    `Killing` event listed with the controller's decision that a job failed (JobSet's FailedJobs, a Job's
    BackoffLimitExceeded: kubectl get events lists one moment's events in no set order)."""
    return SIGNAL_RECEIVED in ev.signature.tags and (
        ev.best.line_no + SAME_REPORT > first_collateral.get(ev.best.source, 1 << 62)
        or any(f.role is Role.COLLATERAL for f in ev.findings))
