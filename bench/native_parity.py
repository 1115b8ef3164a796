"""Every real log diagnosed on both paths, the C line loop and Python (FIRSTFAULT_NATIVE=0), the JSON compared byte
for byte, and each path's total time.

    .venv/bin/python -m bench.native_parity                       # the corpus and bench/field, field2
    .venv/bin/python -m bench.native_parity LOG_OR_DIR ... --exe .venv/bin/firstfault

A log is one `firstfault diagnose LOG --format json --year 2026` in a child process per path (a fixed year: a
log whose stamps print none would otherwise depend on the day). Exit 1 if any log's output, exit status or
stderr differs between the paths.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.corpus import FIELD_SETS, corpus_dir

PATHS = {"native": "1", "python": "0"}  # FIRSTFAULT_NATIVE for each path (catalog/native.py)


def default_logs() -> list[Path]:
    corpus = corpus_dir()
    dirs = [*([corpus / "real"] if corpus else []), *(root / "logs" for root in FIELD_SETS.values())]
    return sorted(log for d in dirs for log in d.glob("*.log"))


def logs_of(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        found += sorted(path.rglob("*.log")) if path.is_dir() else [path]
    return found


def diagnosed(exe: list[str], log: Path, native: str) -> tuple[subprocess.CompletedProcess[bytes], float]:
    env = {**os.environ, "FIRSTFAULT_NATIVE": native}
    began = time.perf_counter()
    done = subprocess.run([*exe, "diagnose", str(log), "--format", "json", "--year", "2026"], env=env,
                          capture_output=True, timeout=600, check=False)
    return done, time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.native_parity")
    ap.add_argument("paths", nargs="*", help="logs or directories of them (default: the corpus and bench/field*)")
    ap.add_argument("--exe", default=None, help="the firstfault command (default: this Python's -m firstfault.cli)")
    a = ap.parse_args(argv)
    exe = [a.exe] if a.exe else [sys.executable, "-m", "firstfault.cli"]
    if a.exe and not shutil.which(a.exe):
        ap.error(f"--exe {a.exe}: not found")
    logs = logs_of(a.paths) if a.paths else default_logs()
    if not logs:
        ap.error("no logs found")
    seconds = dict.fromkeys(PATHS, 0.0)
    differ: list[str] = []
    for log in logs:
        runs = {}
        for name, value in PATHS.items():
            runs[name], took = diagnosed(exe, log, value)
            seconds[name] += took
        native, python = runs["native"], runs["python"]
        if (native.returncode, native.stdout, native.stderr) != (python.returncode, python.stdout, python.stderr):
            differ.append(str(log))
            print(f"DIFFERS {log} (exit {native.returncode} vs {python.returncode})", file=sys.stderr)
    print(f"{len(logs)} logs, {len(logs) - len(differ)} byte-identical on both paths, {len(differ)} differ; "
          f"total {seconds['native']:.1f} s native, {seconds['python']:.1f} s python (FIRSTFAULT_NATIVE=0)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
