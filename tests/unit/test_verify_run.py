"""`firstfault verify`'s runner: output bounded to its end, no shell unless asked, the process group killed."""

from __future__ import annotations

import sys
import time

import pytest

from firstfault.verify_run import run_command
from schemas.errors import UsageError


def test_output_keeps_its_end_and_counts_what_it_dropped() -> None:
    ran = run_command([sys.executable, "-c", "for i in range(200_000): print(f'line {i}')"], 60, max_bytes=4096)
    assert ran.exit_code == 0 and len(ran.output) <= 4096 and ran.output.endswith("line 199999\n")
    assert ran.dropped_bytes == sum(len(f"line {i}\n") for i in range(200_000)) - len(ran.output)


def test_stderr_is_kept_with_stdout_and_the_exit_status_is_the_commands() -> None:
    ran = run_command([sys.executable, "-c", "import sys; print('out'); sys.stderr.write('err\\n'); sys.exit(3)"], 60)
    assert ran.exit_code == 3 and "out" in ran.output and "err" in ran.output and not ran.timed_out


def test_shell_syntax_is_an_argument_without_shell() -> None:
    ran = run_command([sys.executable, "-c", "import sys; print(sys.argv[1:])", "a | b", "$HOME"], 60)
    assert "['a | b', '$HOME']" in ran.output
    assert run_command(["echo $((6 * 7)) | cat"], 60, shell=True).output == "42\n"
    with pytest.raises(UsageError, match="add --shell"):
        run_command(["echo 1 | cat"], 60)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"  # a zombie is dead, waiting to be reaped
    except FileNotFoundError:
        return False


def test_a_timeout_kills_the_children_too() -> None:
    ran = run_command(["sleep 60 & echo $!; wait; echo never"], 0.5, shell=True)
    assert ran.timed_out and ran.exit_code == 124 and "never" not in ran.output
    child = int(ran.output.split()[0])  # the shell's child, not only the shell
    # a killed process closes its files (the pipe's EOF) a moment before it is marked dead: let it finish dying
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
