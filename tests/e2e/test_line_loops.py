"""The e2e tests' two runs (tests/e2e/conftest.py) do take two paths: the [python] run's diagnoses scan with no C
function at all, the [native] run's with the C line loop, in process and in a child process."""

from __future__ import annotations

import os
import subprocess
import sys

from catalog import native
from correlator.reading import SourceScanner
from correlator.speakers import Who
from scan.engine import default_matcher


def test_each_run_takes_its_own_path(line_loop: str | None) -> None:
    assert line_loop in ("native", "python")
    on = line_loop == "native"
    assert native.enabled() is on
    assert (default_matcher().engine.name == "libhs") is on
    assert (SourceScanner(default_matcher(), "a.log", Who(), 2026)._native_plan_for is not None) is on
    child = subprocess.run([sys.executable, "-c", "from catalog import native; print(native.enabled())"],
                           capture_output=True, text=True, env=os.environ, timeout=60, check=True)
    assert child.stdout.strip() == str(on)
