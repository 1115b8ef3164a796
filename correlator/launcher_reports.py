"""Launchers other than torchrun and srun that name the first process to fail: their reports' context patterns
(merged into correlator/context.py's), and the first-failure records of those that name a rank and a host.

Each report says which process the launcher saw end first and how, never why: it is read here as a first-failure
record (exits.first_failures, as torchrun's "Root Cause (first observed failure)" row is), not as a cause. A rank
it names that waited (its own watchdog timed out) or was stopped is set aside there: in a job one rank stalled, the
first to end is a rank that waited for it. Pure: context records in, records out.

- Open MPI's mpirun / PRRTE's prterun (openpmix/prrte src/runtime/prte_quit.c print_aborted_job, help-prun.txt
  [prun:proc-aborted-strsignal] and [prun:proc-aborted]; open-mpi/ompi v4.1.x orte/tools/orterun/help-orterun.txt
  [orterun:proc-aborted-strsignal]): "%s noticed that process rank %lu with PID %lu on node %s exited on" then
  "signal %d (%s)." -- the help file's text breaks the line after "exited on", so prterun prints it on two lines
  (Open MPI 4's orterun joined them). Its rank is the MPI_COMM_WORLD rank (the application's vpid).
- Flux's first-task-exit plugin (flux-framework/flux-core src/shell/doom.c, doom_timeout / doom_check; named
  "doom" until 2025-04, "task-exit" since): after exit-timeout (30 s by default) it kills the job with
  "[<arg0>: ][task ]rank %d[ on host %s] exited[ (<strsignal>|Exit N)] and exit-timeout=%s has expired" (or
  "... failed ... and exit-on-error is set"), logged by the job shell and repeated as the job's fatal exception
  note (src/cmd/job/attach.c: "%.3fs: job.exception [<id> ]type=exec severity=0 %s"). The rank is the task rank,
  the job-wide one; "shell rank N" is a job shell's, a node's index, and is not read as a rank.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from correlator.failure_tables import ExitRecord
from correlator.kept import ContextRecord
from correlator.signals import SIGNAL_CODES

if TYPE_CHECKING:
    from correlator.identity import IdentityMap

# the launchers' own names in the report (prte_tool_basename: the name the launcher was run by)
_MPI_TOOLS = r"(?:mpirun|mpiexec|orterun|prterun|prun)"

REPORT_PATTERNS: dict[str, str] = {
    # Open MPI's launcher when a process exits non-zero (open-mpi/ompi v4.1.x orte/runtime/orte_quit.c
    # orte_print_aborted_job -> help-orterun.txt [orterun:non-zero-exit]; PRRTE's prterun, help-prun [non-zero-exit]):
    # "The first process to do so was:", then "  Process name: %s" (ORTE_NAME_PRINT: [[job family,local job],vpid];
    # PRRTE's PRTE_NAME_PRINT: [nspace,vpid], the nspace "prterun-<host>-<pid>@<local job>", src/util/name_fns.c)
    # and "  Exit code:    %d" on the next line. Local job 1 is the application launched (0 the daemons, 2 and up
    # spawned jobs), whose vpid is the MPI_COMM_WORLD rank (correlator/identity.py pairs the two lines).
    "mpi_exit_name": r"^[ \t]*Process name:[ \t]+\[(?:\[\d+,|[\w.-]+@)(?P<job>\d+)\]?,(?P<rank>\d+)\][ \t]*$",
    "mpi_exit_code": r"^[ \t]*Exit code:[ \t]+(?P<exit_code>-?\d+)[ \t]*$",
    # horovodrun's own launcher (horovod/runner/gloo_run.py, launch_gloo) ends the same way: "Horovod detected that
    # one or more processes exited with non-zero status, ... The first process to do so was:", "Process name: {name}",
    # "Exit code: {code}", the name being the process's index in the host allocation plan: its rank
    "hvd_exit_name": r"^[ \t]*Process name:[ \t]+(?P<rank>\d{1,6})[ \t]*$",
    # the report's first line, whole or wrapped after "exited on" (the signal then starts the next line)
    "mpi_noticed": rf"\b{_MPI_TOOLS} noticed that process rank (?P<rank>\d+) with PID (?:\d+|\S+) on node "
    r"(?P<host>[\w.-]+) exited on(?: signal (?P<signo>\d+))?",
    "mpi_signal_tail": r"^signal (?P<signo>\d{1,2})(?: \([^)\n]*\))?\.[ \t]*$",
    # pdsh's ssh module when a node's session ends non-zero (chaos/pdsh src/modules/sshcmd.c sshcmd_destroy: "%p: %s:
    # ssh exited with exit code %d", %p "pdsh@<launching host>", %s the target node): a code other than ssh's own 255
    # (slurm.yaml pdsh.node_unreachable) is the remote command's, so that node's processes ended with it; pdsh
    # prints nothing for a session that ends 0
    "pdsh_exit": r"\bpdsh@[\w.-]+: (?P<host>[\w.-]+): ssh exited with exit code (?P<exit_code>\d{1,3})\b",
    "flux_first_exit": r"(?:(?:doom|task-exit): |type=exec severity=0 )(?:[^\s:]+: )?(?:task )?rank (?P<rank>\d+)"
    r"(?: on host (?P<host>[\w.-]+))? (?:exited|failed)(?: \((?:Exit (?P<exit_code>\d+)|(?P<signal>[^)\n]+))\))? "
    r"and exit-(?:timeout=\S+ has expired|on-error is set)",
}

REPORT_EXAMPLES: dict[str, tuple[str, ...]] = {
    "mpi_exit_name": ("  Process name: [[2886,1],3]", "   Process name: [prterun-gpu-st-p5-17-22655@1,26]"),
    "mpi_exit_code": ("  Exit code:    1",),
    "hvd_exit_name": ("Process name: 1",),
    "mpi_noticed": ("prterun noticed that process rank 6 with PID 3235582 on node gpu-st-p5en48xlarge-3 exited on",
                    "mpirun noticed that process rank 0 with PID 12724 on node vegas12 exited on signal 11 "
                    "(Segmentation fault)."),
    "mpi_signal_tail": ("signal 9 (Killed).",),
    "pdsh_exit": ("pdsh@neox-worker-0: neox-worker-1: ssh exited with exit code 1",),
    "flux_first_exit": ("17168.870s: flux-shell[0]: FATAL: doom: rank 11 on host r06u21 exited and "
                        "exit-timeout=30s has expired",
                        "3.104s: job.exception f2Bnb6Pa7 type=exec severity=0 python3: task rank 5 on host "
                        "tioga12 exited (Segmentation fault) and exit-timeout=30s has expired"),
}


def _int(value: object) -> int | None:
    text = str(value) if value is not None else ""
    return int(text) if text.isdigit() else None


def _mpi(records: Iterable[ContextRecord], tails: Mapping[tuple[str, int], int]
         ) -> Iterable[tuple[int, str | None, int | None, ContextRecord]]:
    """(rank, host, negative signal or None, record) of each mpirun/prterun signal report. A wrapped report's
    signal is the next line's; a whole line's own signal is left to the catalog (launch.yaml mpi.process_signaled
    makes its exit record)."""
    for rec in records:
        rank = _int(rec.fields.get("rank"))
        if rank is None:
            continue
        host = str(rec.fields["host"]) if rec.fields.get("host") else None
        signo = None if _int(rec.fields.get("signo")) is not None else tails.get((rec.source, rec.line_no + 1))
        yield rank, host, -signo if signo else None, rec


def _flux(records: Iterable[ContextRecord]) -> Iterable[tuple[int, str | None, int | None, ContextRecord]]:
    """(rank, host, exit code or negative signal, record) of each Flux first-task-exit report."""
    for rec in records:
        rank = _int(rec.fields.get("rank"))
        if rank is None:
            continue
        host = str(rec.fields["host"]) if rec.fields.get("host") else None
        code = _int(rec.fields.get("exit_code"))
        signal = rec.fields.get("signal")
        if code is None and isinstance(signal, str):
            code = SIGNAL_CODES.get(signal)
        yield rank, host, code, rec


def launcher_first_failures(of_kind: Mapping[str, list[ContextRecord]]
                            ) -> tuple[list[tuple[int, str | None, str, int]], list[ExitRecord]]:
    """The first-failure records (rank, host, source, line) the launchers' reports give, and the exit records
    of those that say how the process ended where no catalog entry reads it (a wrapped report, Flux's)."""
    tails = {(rec.source, rec.line_no): int(rec.fields["signo"]) for rec in of_kind.get("mpi_signal_tail", ())}
    firsts: list[tuple[int, str | None, str, int]] = []
    exits: list[ExitRecord] = []
    seen: set[tuple[str, int]] = set()  # Flux's shell log line and its exception note: one report
    reports = [*_mpi(of_kind.get("mpi_noticed", ()), tails), *_flux(of_kind.get("flux_first_exit", ()))]
    for rank, host, code, rec in reports:
        if (rec.source, rank) in seen:
            continue
        seen.add((rec.source, rank))
        firsts.append((rank, host, rec.source, rec.line_no))
        if code is not None:
            exits.append(ExitRecord(rank, None, host, None, code, rec.source, rec.line_no))
    return firsts, exits


def pdsh_exits(records: Iterable[ContextRecord]) -> list[ExitRecord]:
    """A node's exit record for each pdsh session that ended with its remote command's non-zero code (255 is
    ssh's own failure: a catalog entry reads it)."""
    exits = []
    for rec in records:
        code = _int(rec.fields.get("exit_code"))
        if code and code != 255:
            exits.append(ExitRecord(None, None, str(rec.fields["host"]), None, code, rec.source, rec.line_no))
    return exits


def add_launcher_reports(ids: IdentityMap, of_kind: Mapping[str, list[ContextRecord]]) -> None:
    """The launchers' first-failure records and the exit records they give, into the identity map. The host a
    report names for its rank is where that rank ran: it stands before a line's speaker (a file's name read as a
    host), not before NCCL's init lines (build_identity writes those over it)."""
    firsts, exits = launcher_first_failures(of_kind)
    ids.first_failures.extend(firsts)
    ids.exits.extend(exits)
    ids.exits.extend(pdsh_exits(of_kind.get("pdsh_exit", ())))
    for rank, host, _, _ in firsts:
        if host is not None:
            ids.host_of_rank.setdefault(rank, host)
