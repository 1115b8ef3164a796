"""Exit reports, and the lines that say why (issue 22, pattern 3).

A launcher's or scheduler's report of how a process ended (srun's `task 3: Exited with exit code 1`, torchrun's
`failed (exitcode: 1)` and its failure table, ChildFailedError) is how a cause ends, never the cause when a line
that says why is anywhere in the logs. It may still say which rank: its exit code is weighed by the exit rules
(scoring._exits), and a code that says what happened (killed, crashed) is that rank's own evidence.

srun's lines (SchedMD/slurm src/srun/launch.c _task_finish: `%s: %s %s: Exited with exit code %d` and
`%s: %s %s: %s%s` with strsignal's text) name srun task ids: the global rank when srun starts one process per
rank, the node's launcher when srun starts torchrun (whose own failure table then names the ranks).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from correlator.events import Event, Target, reports_exit, task_ids
from correlator.identity import METADATA, ExitRecord, IdentityMap
from correlator.members import CATEGORY_LAUNCHER, IMPLICATES_NAMED, IMPLICATES_NONE, ROLE_EITHER, ROLE_INITIATING
from correlator.sieve import of_entries
from correlator.signals import SIGNAL_CODES as SIGNAL_CODES  # re-exported: strsignal's texts as codes
from schemas.findings import Role

CONNECT_RETRY = "pytorch.store.connect_failed"  # c10d's TCPStore client (correlator/startup_retries.py)
TEARDOWN_CODES = frozenset({-15, 143, 15, -2, 130})  # SIGTERM / SIGINT: stopped by the agent or from outside

# Killed or crashed: the code itself says what happened to the process (a SIGKILL from the OOM killer or the
# scheduler, a segfault, a bus error, an illegal instruction), which a code of 1 or a SIGABRT after an exception
# does not.
DEATH_CODES = frozenset({-9, 137, -11, 139, -7, 135, -4, 132})
# A worker's exit code that names its signal (torchrun's table prints -N; a shell, 128 + N): the crash's class
EXIT_SIGNATURES = {-9: "torchrun.worker_sigkilled", 137: "torchrun.worker_sigkilled",
                   -11: "torchrun.worker_segfault", 139: "torchrun.worker_segfault",
                   -6: "torchrun.worker_sigabrt", 134: "torchrun.worker_sigabrt",
                   -7: "torchrun.worker_sigbus", 135: "torchrun.worker_sigbus",
                   -4: "torchrun.worker_sigill", 132: "torchrun.worker_sigill"}
# An entry tagged with a signal's name already says how the process ended; one without (mpirun's "exited on signal
# 11", torchrun's "failed (exitcode: -11)") reports an ending whose class the signal gives
SIGNAL_TAGS = frozenset({"sigkill", "sigsegv", "sigabrt", "sigbus", "sigill", "sigterm"})
# How a reason begins where torchrun's "Root Cause" row tied with another row's second (calibration reads it)
TIED_FIRST = "torchrun's failure table heads it"


def exit_report(ev: Event) -> bool:
    """A launcher (or the scheduler, about one task) reporting an exit code or signal: weighed by the exit rules,
    not as a fault of its own."""
    return ("exit_code" in ev.best.fields or "signal" in ev.best.fields) and reports_exit(ev.signature)


def launcher_summary(ev: Event) -> bool:
    """A launcher saying that a child failed without naming anyone or why (torchrun's ChildFailedError)."""
    return ev.signature.category is CATEGORY_LAUNCHER and ev.signature.implicates is IMPLICATES_NONE


def cause_like(ev: Event) -> bool:
    """A line that can say why something failed: not a report of how a process ended, not a victim's line, not
    context, not a line another rule already charged to someone else (weight 0)."""
    return (ev.role in (ROLE_INITIATING, ROLE_EITHER) and not ev.stale and ev.weight != 0.0
            and not exit_report(ev) and not launcher_summary(ev))


def code_of(fields: dict[str, object]) -> int | None:
    """The exit code a line reports, or the negative signal it names (srun's strsignal text, too)."""
    return _code(fields)


def _code(fields: dict[str, object]) -> int | None:
    code = fields.get("exit_code")
    if isinstance(code, int):
        return code
    if isinstance(code, str) and code.lstrip("-").isdigit():
        return int(code)
    signal = fields.get("signal")
    return SIGNAL_CODES.get(signal.split(" (")[0]) if isinstance(signal, str) else None


def task_exits(events: Sequence[Event], ids: IdentityMap) -> list[ExitRecord]:
    """srun's task exit lines as exit records (every line of the event: srun prints them in a run). Under
    torchrun (its own exit records name the ranks) an srun task is a node's launcher: the record names the host
    only."""
    under_torchrun = any(e.source != METADATA for e in ids.exits)
    out = []
    # the events of launcher and scheduler entries alone, picked in C (asked three times a diagnosis, of every
    # rank's timeouts and resets)
    for ev in of_entries(events, reports_exit):
        if ev.stale or not exit_report(ev):
            continue
        if ev.signature.implicates is not IMPLICATES_NAMED:
            out += _node_launcher_exit(ev)
            continue
        for f in ev.findings:
            code = _code(f.fields) if f.signature == ev.signature.id else None
            if code is None:
                continue
            host = f.fields.get("host")
            host = (ids.host_of(host) or host) if isinstance(host, str) else ev.reporter.host
            tasks: list[int | None] = [None] if under_torchrun else [*task_ids(f.fields)]
            out += [ExitRecord(task, None, host, None, code, f.source, f.line_no) for task in tasks]
    return out


_NAMES_A_PROCESS = ("rank", "local_rank", "pid")  # fields by which an exit report names one process, not a node


def _node_launcher_exit(ev: Event) -> list[ExitRecord]:
    """A node's launcher reporting that one of its workers exited, naming only the node (DeepSpeed's
    sigkill_handler: "<cmd> exits with return code = N", where cmd is the last local rank started, whichever
    failed: deepspeed/launcher/launch.py main), as an exit record of that host: a code that says killed or crashed,
    which no other node's launcher reports, is that node's death (death_targets)."""
    code = _code(ev.best.fields)
    if (code is None or ev.reporter.rank is not None or ev.reporter.host is None
            or any(k in ev.best.fields for k in _NAMES_A_PROCESS)):
        return []
    return [ExitRecord(None, None, ev.reporter.host, None, code, ev.best.source, ev.best.line_no)]


def death_targets(exits: Iterable[ExitRecord], ids: IdentityMap) -> set[tuple[int | None, str | None]]:
    """(rank, host) of every process killed or crashed, unless a third of the job shares the code (a teardown)."""
    exits = list(exits)
    who: dict[int, set[object]] = {}
    for e in exits:
        who.setdefault(e.exit_code, set()).add(e.rank if e.rank is not None else e.host)
    everyone = set().union(*who.values()) if who else set()
    out = set()
    for e in exits:
        sharing = len(who[e.exit_code])
        if e.exit_code in DEATH_CODES and not e.after_first and not (sharing >= 3 and sharing > len(everyone) / 3):
            out.add((e.rank, e.host if e.rank is None else ids.host_of_rank.get(e.rank, e.host)))
    return out


def first_failures(ids: IdentityMap, events: Iterable[Event]) -> list[tuple[Target, str, bool]]:
    """The ranks torchrun's failure tables head "Root Cause (first observed failure)" (the worker its agent
    recorded first: ChildFailedError.get_first_failure, the earliest timestamp), and those other launchers report
    the first to end (correlator/launcher_reports.py), unless that rank's own watchdog reported a collective
    failing (then it was waiting, and exited first because its timer ran out first) or its row says it was
    stopped (SIGTERM, SIGINT). Each with whether its row tied: another row of its table was
    recorded in the same second, so torchrun's pick among them is by order, not by time."""
    # (not a store client's connect retry: a process retries at start-up before any collective, and one the
    # kernel killed later printed nothing else)
    waited = {ev.reporter.rank for ev in events if ev.role is Role.COLLATERAL and ev.reporter.rank is not None
              and not ev.stale and ev.signature.id != CONNECT_RETRY}
    stopped = {e.rank for e in ids.exits if e.exit_code in TEARDOWN_CODES and e.rank is not None}
    tied = {(e.source, e.rank) for e in ids.exits if e.tied_first}
    out, seen = [], set()
    for rank, host, source, line_no in ids.first_failures:
        if rank in waited or rank in stopped or rank in seen:
            continue
        seen.add(rank)
        is_tied = (source, rank) in tied
        reason = (f"{TIED_FIRST} ({source}:{line_no}), but another worker failed in the same second: torchrun's "
                  "pick among them is by order, not by time" if is_tied else
                  f"its launcher's report names it the first process to fail ({source}:{line_no})")
        out.append((Target(rank, ids.host_of_rank.get(rank, host)), reason, is_tied))
    return out
