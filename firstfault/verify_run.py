"""Running a verification command: no shell unless asked, a timeout that kills the command's whole process group,
and output kept bounded (its last MAX_OUTPUT_BYTES: where a count, a summary or the error is)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from schemas.errors import UsageError

MAX_OUTPUT_BYTES = 256 << 10
CHUNK = 64 << 10
TIMED_OUT_EXIT = 124  # timeout(1)'s status for a command it killed


@dataclass(frozen=True)
class Ran:
    command: str  # as a person would type it
    exit_code: int
    output: str  # stdout and stderr interleaved, the last MAX_OUTPUT_BYTES
    dropped_bytes: int
    timed_out: bool


def run_command(argv: Sequence[str], timeout_s: float, shell: bool = False,
                max_bytes: int = MAX_OUTPUT_BYTES) -> Ran:
    if not argv:
        raise UsageError("nothing to run: give the command after --")
    shown = " ".join(argv) if shell else shlex.join(argv)  # with --shell, the words are the script
    args: Sequence[str] | str = shown if shell else list(argv)
    try:
        proc = subprocess.Popen(args, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except (FileNotFoundError, PermissionError) as exc:
        raise UsageError(f"cannot run {argv[0]!r}: {exc.strerror} (add --shell for a pipeline or a builtin)") from exc
    kept: deque[bytes] = deque()
    total = [0]
    reader = threading.Thread(target=_drain, args=(proc, kept, total, max_bytes), daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        proc.wait()
    reader.join(timeout=5)  # a grandchild still holding the pipe is not waited for
    if proc.stdout is not None and not reader.is_alive():
        proc.stdout.close()
    data = b"".join(kept)[-max_bytes:]
    return Ran(shown, TIMED_OUT_EXIT if timed_out else proc.returncode, data.decode("utf-8", "replace"),
               max(0, total[0] - len(data)), timed_out)


def _drain(proc: subprocess.Popen[bytes], kept: deque[bytes], total: list[int], max_bytes: int) -> None:
    assert proc.stdout is not None
    held = 0
    while chunk := os.read(proc.stdout.fileno(), CHUNK):
        kept.append(chunk)
        held += len(chunk)
        total[0] += len(chunk)
        while kept and held - len(kept[0]) >= max_bytes:  # what is left still holds the last max_bytes
            held -= len(kept.popleft())


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
        os.killpg(proc.pid, signal.SIGKILL)  # the command's children too (a shell's pipeline)
