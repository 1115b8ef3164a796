"""A job-wide end over a suspect that nothing of its own speaks for. Pure.

A batch system's time limit (slurm.time_limit, pbs.walltime_exceeded, flux.job_timeout, lsf.run_limit) or a
pre-emption ends every process of the job and names none (job_cause.py). Where only exit reports speak for the
likeliest suspect, that end is the answer already (diagnose._assemble). So it is where the suspect has no fault of
its own either (no line of its own says why, no kill or crash, no lag: only others' lines point at it), those
lines weigh less than the end's own line would as a cause (one rank's start-up store retry naming the store's
host, a teardown's lost connections), and no process ended by itself before: every exit report is of a signal the
batch systems send to end a job. A suspect with a fault of its own (a rank that stalled before the limit, its lag
in the collectives) stays the answer, as the catalog's time-limit entries say; so does the question where a
process exited with an error of its own (a node whose tasks could not start, then the rest waited to the limit).
"""

from __future__ import annotations

from collections.abc import Sequence

from correlator.event import Event
from correlator.exits import task_exits
from correlator.identity import IdentityMap
from correlator.job_cause import job_cause
from correlator.scoring import W_ROLE, W_SEVERITY, Candidate

# SIGTERM, SIGKILL (after the grace time), SIGINT, SIGALRM (Flux's time limit), SIGUSR2 (LSF's run limit), as a
# launcher reports them: negative (torchrun) or 128 + N (a shell, srun's codes)
SENT_TO_END_A_JOB = frozenset({-15, 143, 15, -9, 137, -2, 130, -14, 142, -12, 140})


def job_end_over(top: Candidate, failures: Sequence[Event], exit_only: bool, ids: IdentityMap) -> Event | None:
    """The job-wide end to answer with instead of ``top``, or None."""
    if not exit_only and (top.own_fault or top.death):
        return None
    job = job_cause(failures)
    if job is None or exit_only:
        return job
    if any(e.exit_code and e.exit_code not in SENT_TO_END_A_JOB and not e.after_first
           for e in (*ids.exits, *task_exits(failures, ids))):
        return None
    return job if top.score < W_ROLE[job.role] * W_SEVERITY[job.signature.severity] else None
