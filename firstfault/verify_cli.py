"""`firstfault verify INCIDENT -- COMMAND...`: run the fix's verification (or record one run elsewhere), judge it by
the incident's catalog entry (`expect`, else exit status 0) and record it: a pass resolves the incident as
verified, a fail reopens it; the Slack post and the PagerDuty alert follow with the next delivery.

Exit status: 0 passed, 1 failed, 2 a usage error (no such incident, a command that cannot start)."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from catalog.loader import default_catalog
from config.settings import load_settings
from firstfault.verify_run import run_command
from pipeline.verification import Report, verify
from schemas.clock import system_clock
from schemas.errors import TransportError, UsageError
from schemas.incident import Incident
from store.incidents import Store

MAX_REPORTED_OUTPUT = 1 << 20


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry in a container, no LOGNAME
        return "unknown"


def _report(args: argparse.Namespace, by: str) -> Report:
    argv = args.argv
    if argv:
        if args.result or args.exit_code is not None or args.output_file:
            raise UsageError("give a command to run, or --result / --exit-code for one run elsewhere, not both")
        ran = run_command(argv, args.timeout, shell=args.shell)
        return Report(by=by, command=ran.command, exit_code=ran.exit_code, output=ran.output,
                      timed_out_after=args.timeout if ran.timed_out else None)
    if args.result is None and args.exit_code is None:
        raise UsageError("nothing to verify: give the command after --, or --result pass|fail, or --exit-code N")
    return Report(by=by, command=args.reported_command, exit_code=args.exit_code, output=_output(args.output_file),
                  result=args.result, reported=True)


def _output(name: str | None) -> str:
    if name is None:
        return ""
    try:
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise UsageError(f"--output-file {name}: {exc.strerror}") from exc
    return raw[-MAX_REPORTED_OUTPUT:].decode("utf-8", "replace")


def run(args: argparse.Namespace) -> int:
    from notifiers.wiring import outbox_hook  # the notifiers load only for this command

    try:
        store = Store.open(args.db or load_settings().database_url)
    except TransportError as exc:
        raise UsageError(str(exc)) from exc
    try:
        if store.incident(args.incident) is None:  # before running anything
            raise UsageError(f"no incident {args.incident!r} (try: firstfault incidents list)")
        report = _report(args, args.by or _login())
        now = system_clock()
        catalog = default_catalog()
        done = verify(store, catalog, args.incident, report, now, outbox_hook(catalog, lambda: now))
    finally:
        store.close()
    if done is None:
        raise UsageError(f"no incident {args.incident!r} (try: firstfault incidents list)")
    sys.stdout.write(summary(done))
    return 0 if done.verification and done.verification.status == "passed" else 1


def summary(incident: Incident) -> str:
    v = incident.verification
    assert v is not None
    head = (f"PASSED: {incident.id} is verified and resolved" if v.status == "passed"
            else f"FAILED: {incident.id} is {'reopened' if incident.state == 'open' else incident.state}")
    lines = [head, f"  {v.reason}", f"  pass means: {v.criterion}"]
    if v.fallback:
        lines.append("  (the catalog entry has no structured `expect`: judged by exit status 0)")
    lines.append("  its notifications go out with the next delivery (the service's, or `firstfault deliver`)")
    return "\n".join(lines) + "\n"
