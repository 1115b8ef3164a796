"""Running a benchmark's child process: its own rusage (os.wait4) and the memory of its whole process tree."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_S = 0.02


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except OSError:
            continue
    return found


def _rss_pss_kb(pid: int) -> tuple[int, int]:
    """Resident and proportional set size. PSS splits pages shared by forked workers between them, so its sum
    over a process tree is fair; the RSS sum counts shared pages once per process (an upper bound)."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return rss, pss


class TreeMemory:
    """Samples the summed RSS and PSS of a process and all its descendants every SAMPLE_S until stopped.

    (os.wait4's ru_maxrss is no use here: it keeps the high-water mark of the benchmark process that forked the
    child before exec, so every child looked as big as the benchmark itself.)"""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kb = 0
        self.peak_rss_kb = 0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = _descendants(self.pid)
            sizes = [_rss_pss_kb(p) for p in pids]
            self.peak_rss_kb = max(self.peak_rss_kb, sum(r for r, _ in sizes))
            self.peak_kb = max(self.peak_kb, sum(p for _, p in sizes))
            self.peak_processes = max(self.peak_processes, len(pids))
            self._stop.wait(SAMPLE_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_child(cmd: list[str], stdout: Any = subprocess.DEVNULL, stdout_path: Path | None = None,
              env: Mapping[str, str] | None = None, cwd: Path = ROOT) -> tuple[dict[str, Any], Any]:
    """Run ``cmd``; returns its output, exit code, the peak RSS and PSS of its process tree, and its rusage
    (os.wait4: the CPU time of that child and of the workers it reaped, not of every child of this process)."""
    out_fh = stdout_path.open("wb") if stdout_path else None
    with tempfile.TemporaryFile() as err_fh:
        proc = subprocess.Popen(cmd, stdout=out_fh or stdout, stderr=err_fh, cwd=cwd,
                                env=dict(env) if env is not None else None)
        memory = TreeMemory(proc.pid)
        out = proc.stdout.read() if proc.stdout is not None else b""
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped: the pid is still its own
        memory.stop()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.stdout is not None:
            proc.stdout.close()
        err_fh.seek(0)
        err = err_fh.read()
    if out_fh:
        out_fh.close()
    return ({"rc": proc.returncode, "stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace"),
             "tree_pss_mb": round(memory.peak_kb / 1024, 1), "tree_rss_mb": round(memory.peak_rss_kb / 1024, 1),
             "processes": memory.peak_processes}, usage)


def compiled_bytecode() -> None:
    """Write firstfault's bytecode before timing it, as installing it does. Under PYTHONDONTWRITEBYTECODE (set on
    some machines) an edited module is compiled again by every `diagnose` the benchmark starts: 20-40 ms each,
    which the users' installed copy never pays."""
    import compileall

    for package in ("catalog", "correlator", "config", "firstfault", "ingest", "schemas", "scan", "simulate", "sources",
                    "store", "pipeline", "runtime", "workers", "notifiers", "api"):
        compileall.compile_dir(ROOT / package, quiet=1)
