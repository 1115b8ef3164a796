"""When only exit codes speak: the logs hold how the job ended, never why. Pure.

torchrun's failure table (pytorch/pytorch torch/distributed/elastic/multiprocessing/errors/__init__.py,
ProcessFailure and _FAILURE_FORMAT_TEMPLATE) carries a worker's traceback only when the worker wrote an error file
(its entry point decorated with @record); otherwise it prints `error_file: <N/A>` and, as the traceback row,
`To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html` for an exit code, or
`Signal 6 (SIGABRT) received by PID n` for a signal. With srun's `task N: Exited with exit code 1` lines and the
agent's `failed (exitcode: -6)`, such a job's logs say which process ended and how, and nothing about the cause.
The diagnosis must then say so: the cause is unknown, here is what the exit codes show, and the rank they point
at is a suspect, not an initiator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from correlator.calibration import CAP_THIN
from correlator.events import NO_ERROR_FILE, REPORTS_ONLY, Event
from correlator.exits import DEATH_CODES
from correlator.identity import IdentityMap
from correlator.kept import ContextRecord
from correlator.members import CATEGORY_LAUNCHER, ROLE_COLLATERAL

TELLING_CODES = DEATH_CODES  # their own entries: torchrun.worker_sigkilled, ...
CAP = CAP_THIN  # under calibration.SUSPECTS_BELOW: the rank the exit codes point at is listed as a suspect
MAX_CODES = 4

_MEANING = {
    -6: "SIGABRT: the process aborted itself (abort(), a failed C++ check, or the NCCL watchdog taking the process "
        "down after a collective error or timeout)",
    134: "SIGABRT (128 + 6): the process aborted itself",
    -15: "SIGTERM: it was told to stop, by the launcher tearing down the group or by the scheduler",
    143: "SIGTERM (128 + 15): it was told to stop",
    -2: "SIGINT: interrupted (Ctrl-C or the launcher)",
    -1: "SIGHUP: its terminal or the launcher went away",
    1: "an uncaught Python exception or sys.exit(1), whose traceback went to that process's own stderr",
}


@dataclass(frozen=True)
class Unexplained:
    """The note the diagnosis leads with, the entry to report it under (None: keep the scored one), the cap."""

    note: str
    signature: str | None
    cap: float = CAP


def _meaning(code: int) -> str:
    if code in _MEANING:
        return _MEANING[code]
    if code < 0:
        return f"killed by signal {-code}"
    return "the worker's own exit status"


def _codes(ids: IdentityMap, failures: Sequence[Event]) -> list[tuple[int, str]]:
    """(exit code, whose) in the order reported, each once: the table's and metadata's, then the launchers'."""
    out: list[tuple[int, str]] = []
    for e in ids.exits:
        whose = f"rank {e.rank}" if e.rank is not None else f"host {e.host}" if e.host else "a worker"
        out.append((e.exit_code, whose))
    listed = {c for c, _ in out}
    for ev in failures:
        code = ev.best.fields.get("exit_code")
        if not isinstance(code, int) or code in listed:
            continue
        host = ev.best.fields.get("host")
        whose = ev.reporter.label if ev.reporter.rank is not None or ev.reporter.host else (
            f"a task on {host}" if isinstance(host, str) else "a worker")
        out.append((code, whose))
        listed.add(code)
    seen: set[tuple[int, str]] = set()
    return [item for item in out if not (item in seen or seen.add(item))]  # type: ignore[func-returns-value]


def cause_unknown(failures: Sequence[Event], of_kind: Mapping[str, list[ContextRecord]], ids: IdentityMap,
                  events: Sequence[Event] = ()) -> Unexplained | None:
    """The note for a job whose every failure line is a launcher's or scheduler's report of an ending; None when
    any line says more (a cause, a consequence, derived evidence) or no exit code is known."""
    live = [ev for ev in failures if not ev.stale]
    consequences = [ev for ev in live if ev.signature.id not in REPORTS_ONLY and ev.weight is None
                    and ev.role is ROLE_COLLATERAL and not ev.about_peer and not ev.survivor
                    and all(t == ev.reporter for t in ev.implicated)]
    consequential = {id(ev) for ev in consequences}  # `ev in consequences` compared events field by field
    if not live or any((ev.signature.id not in REPORTS_ONLY or ev.weight is not None) and id(ev) not in consequential
                       for ev in live):
        return None
    codes = _codes(ids, live)
    if not codes or any(code in TELLING_CODES for code, _ in codes):
        return None
    if consequences:
        return _consequences_only(consequences, codes)
    no_file = bool(of_kind.get("table_no_error_file")) or any(
        f.signature == NO_ERROR_FILE for ev in events for f in ev.findings)
    shown = "; ".join(f"exit code {code} on {whose} means {_meaning(code)}" for code, whose in codes[:MAX_CODES])
    why = "torchrun recorded no error file (error_file: <N/A>, no traceback in its table); " if no_file else ""
    note = (f"the cause is not in these logs: {why}only exit codes speak. {shown}. Read that process's own stderr "
            "(torchrun --log-dir / --tee 3) and its host's kernel log (dmesg -T) around that time")
    return Unexplained(note, NO_ERROR_FILE if no_file else None)


def _consequences_only(consequences: Sequence[Event], codes: Sequence[tuple[int, str]]) -> Unexplained:
    """Exit reports and lines that are consequences of a failure elsewhere (a watchdog aborting its process after
    an NCCL error on the communicator): what happened is the consequence, and its cause is in no log here. The
    launcher's own teardown (torchrun escalating to SIGKILL for a worker that ignored SIGTERM, elastic/
    multiprocessing/api.py _close) happens after the failure, to another process: it says nothing of what
    happened, and the exit report's entry stays (a worker's -6 is an abort, not a teardown)."""
    telling = [ev for ev in consequences if ev.signature.category is not CATEGORY_LAUNCHER]
    first = min(telling or consequences, key=lambda ev: ev.best.order)
    shown = "; ".join(f"exit code {code} on {whose} means {_meaning(code)}" for code, whose in codes[:MAX_CODES])
    note = (f"the cause is not in these logs: the only failure lines are consequences of a failure elsewhere "
            f"({first.signature.id}, {first.best.source}:{first.best.line_no}) and exit reports. {shown}. Read the "
            "other ranks' and hosts' logs (torchrun --log-dir / --tee 3, dmesg -T) from just before that time")
    return Unexplained(note, first.signature.id if telling else None)
