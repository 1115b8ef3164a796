"""Runs one atheris target (tests/fuzz/targets/<name>.py) in a subprocess under libFuzzer and reads back what it
did. A subprocess because libFuzzer ends its process on the first crash; pytest must live to report it.

Bounds on every run: -runs (inputs), -max_total_time (a cap on the run, far above its usual time, so a slow
target cannot take CI down with it), -rss_limit_mb (memory bounded: over it is an "out-of-memory" finding),
-timeout (a single input running longer is a hang). New inputs libFuzzer finds go to a scratch directory: the
seed corpus in the repo (tests/fuzz/corpus/<name>/) is only read.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TARGETS = ("wire", "shard_data", "logs", "catalog_file", "render")
MAX_LEN = {"render": 16_384}  # an incident's JSON is ~2 kB before a mutation grows it; the others' inputs 4 kB
DEFAULT_MAX_LEN = 4_096
RSS_LIMIT_MB = 1_536  # a target's process holds ~250 MB (pydantic, the catalog, the matcher) before an input
INPUT_TIMEOUT_S = 20  # one input: a hang, not a slow input on a loaded machine (the slowest take ~0.1 s)
_ARTIFACT = re.compile(r"^(crash|timeout|oom|leak|slow-unit)-")


@dataclass
class FuzzRun:
    target: str
    returncode: int
    runs: int
    seconds: float  # wall time of the subprocess: start-up (imports, the matcher) included
    output: str
    findings: list[Path] = field(default_factory=list)

    def report(self) -> str:
        """What a developer needs to reproduce each finding: the input and the command."""
        lines = [f"{self.target}: libFuzzer exited {self.returncode} after {self.runs:,} runs"]
        for path in self.findings:
            data = path.read_bytes()
            lines += [f"  {path.name} ({len(data):,} bytes): {data[:300]!r}",
                      f"  base64: {base64.b64encode(data).decode()[:4000]}",
                      f"  reproduce: python tests/fuzz/launch.py {self.target} {path}"]
        tail = self.output.strip().splitlines()[-60:]
        return "\n".join([*lines, "  --- libFuzzer's output, last lines ---", *tail])


def _stat(output: str, name: str) -> int:
    found = re.findall(rf"stat::{name}:\s+(\d+)", output)
    return int(found[-1]) if found else 0


def run_target(target: str, runs: int, max_seconds: int, scratch: Path | None = None,
               corpus: Path | None = None) -> FuzzRun:
    """Fuzz `target` for `runs` inputs (or until `max_seconds`), seeded from its corpus."""
    scratch = scratch or Path(tempfile.mkdtemp(prefix=f"ff-fuzz-{target}-"))
    found_dir = scratch / "found"
    found_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(HERE / "launch.py"), target, f"-runs={runs}",
               f"-max_total_time={max_seconds}", f"-rss_limit_mb={RSS_LIMIT_MB}", f"-timeout={INPUT_TIMEOUT_S}",
               f"-max_len={MAX_LEN.get(target, DEFAULT_MAX_LEN)}", "-print_final_stats=1",
               f"-artifact_prefix={scratch}/", "-seed=1" if os.environ.get("FF_FUZZ_SEED") is None
               else f"-seed={os.environ['FF_FUZZ_SEED']}"]
    dictionary = HERE / "dicts" / f"{target}.dict"
    if dictionary.exists():
        command.append(f"-dict={dictionary}")
    command += [str(found_dir), str(corpus or HERE / "corpus" / target)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "XDG_CACHE_HOME": str(scratch / "cache")}
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, errors="replace",
                          timeout=max_seconds + 300)
    output = done.stdout + done.stderr
    findings = sorted(p for p in scratch.iterdir() if _ARTIFACT.match(p.name))
    return FuzzRun(target, done.returncode, _stat(output, "number_of_executed_units"),
                   time.monotonic() - started, output, findings)


def main() -> int:
    """`python -m tests.fuzz.runner [TARGET...]`: each target for FF_ATHERIS_RUNS inputs (default 10,000)."""
    runs = int(os.environ.get("FF_ATHERIS_RUNS", "10000"))
    failed = 0
    for target in sys.argv[1:] or TARGETS:
        result = run_target(target, runs, int(os.environ.get("FF_ATHERIS_SECONDS", "3600")))
        print(f"{target}: {result.runs:,} inputs in {result.seconds:.1f} s, exit {result.returncode}, "
              f"{len(result.findings)} finding(s)", flush=True)
        if result.returncode != 0 or result.findings:
            print(result.report(), flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
