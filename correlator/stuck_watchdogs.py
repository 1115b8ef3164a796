"""A watchdog that got stuck after it caught its own collective timing out (issue 22: a role rule).

PyTorch's ProcessGroupNCCL runs a watchdog thread over each rank's collectives and a heartbeat monitor over the
watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: watchdogHandler, HeartbeatMonitor::runLoop). When a
collective outruns the process group's timeout the watchdog reports it (`Watchdog caught collective operation
timeout`), then dumps debug info and aborts the communicators; an abort or a CUDA call that blocks on a peer gone
or stuck keeps the watchdog from ticking, and TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC later the monitor reports `watchdog
got stuck for N seconds` and ends the process. A rank whose watchdog caught the timeout was ticking when the
collective ran out: its stuck watchdog came after, so the monitor's line is how its wait ended, not why the job
stalled, whatever order a paste puts the two in. Alone on a rank (no timeout of its own), the line keeps its
`either` role: a GPU or driver hang stops the watchdog before any timeout is caught.
Pure: events in, roles changed in place.
"""

from __future__ import annotations

from collections.abc import Sequence

from correlator.event import Event
from correlator.members import ROLE_COLLATERAL, ROLE_EITHER

WATCHDOG_HANG_TAG = "watchdog_hang"  # the catalog's tag for the heartbeat monitor's report of a stuck watchdog
TIMEOUT_TAGS = frozenset({"watchdog", "timeout"})  # a watchdog's report of a collective that outran its timeout


def mark_stuck_after_timeout(failures: Sequence[Event]) -> None:
    """A stuck watchdog's report on a rank whose own watchdog caught a collective timing out is collateral."""
    timed_out = {rank for ev in failures if ev.role is ROLE_COLLATERAL and set(ev.signature.tags) >= TIMEOUT_TAGS
                 for rank in _ranks(ev)}
    if not timed_out:
        return
    for ev in failures:
        if ev.role is ROLE_EITHER and WATCHDOG_HANG_TAG in ev.signature.tags and _ranks(ev) & timed_out:
            ev.role = ROLE_COLLATERAL


def _ranks(ev: Event) -> set[int]:
    """The ranks whose line it is: the prefix's, or the one its own text names (`[PG ID 0 ... Rank 7]`)."""
    return {t.rank for t in (ev.reporter, *ev.implicated) if t.rank is not None}
