"""The arguments of `firstfault verify`. Light on purpose: the CLI builds every parser at start, and the store and
notifier imports wait in firstfault/verify_cli.py until the command runs."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    v = sub.add_parser("verify", help="run (or record) the fix's verification: a pass marks the incident verified, "
                                      "a fail reopens it")
    v.add_argument("incident", metavar="INCIDENT",
                   help="then -- and the command to run; without one, record --result or --exit-code instead")
    v.add_argument("--by", default=None, help="who verified (default: the login name)")
    v.add_argument("--timeout", type=float, default=600.0, help="seconds before the command is killed (a fail)")
    v.add_argument("--shell", action="store_true", help="run the command through /bin/sh (pipes, globs)")
    v.add_argument("--result", choices=["pass", "fail"], help="a result someone ran elsewhere, as stated")
    v.add_argument("--exit-code", type=int, help="the exit status of a command run elsewhere (judged here)")
    v.add_argument("--output-file", metavar="FILE", help="its output (- for stdin), judged with --exit-code")
    v.add_argument("--command", dest="reported_command", default="", help="what was run elsewhere")
    v.add_argument("--db", metavar="URL")


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """`verify ... -- COMMAND...`: the options, and the command after the first `--` (argparse would read the
    command's own options, `python -c`, as its own)."""
    if argv[:1] != ["verify"] or "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1:]
