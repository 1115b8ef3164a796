"""The atheris targets (tests/fuzz/targets/), each run under libFuzzer in a subprocess for FF_ATHERIS_RUNS inputs
(10,000 by default), seeded from its corpus in tests/fuzz/corpus/. A target's crash, hang (one input over 20 s)
or memory past 1.5 GB fails the test and prints the input and the command that replays it; the cases found are
kept as explicit tests in tests/fuzz/test_found.py. See docs/fuzzing.md for what each target feeds and states.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fuzz.runner import TARGETS, run_target

pytest.importorskip("atheris", reason="atheris is a dev extra: pip install -e '.[dev]'")

RUNS = int(os.environ.get("FF_ATHERIS_RUNS", "10000"))
# a cap on one target's run, ~10x its time on the 2-core CI machine: a slower target fails here, not CI's clock
MAX_SECONDS = int(os.environ.get("FF_ATHERIS_SECONDS", "300"))


@pytest.mark.parametrize("target", TARGETS)
def test_the_target_survives_its_inputs(target: str, tmp_path: Path) -> None:
    result = run_target(target, RUNS, MAX_SECONDS, tmp_path)
    assert result.returncode == 0 and not result.findings, result.report()
    assert result.runs >= RUNS, f"only {result.runs:,} of {RUNS:,} inputs within {MAX_SECONDS} s\n{result.report()}"
    print(f"{target}: {result.runs:,} inputs in {result.seconds:.1f} s ({result.runs / result.seconds:,.0f}/s)")


def test_a_failing_input_is_reported_with_its_bytes_and_how_to_replay_it(tmp_path: Path) -> None:
    corpus = tmp_path / "seeds"
    corpus.mkdir()
    (corpus / "seed").write_bytes(b"TRIP wire")
    result = run_target("tripwire", 100, 60, tmp_path / "run", corpus)
    assert result.returncode != 0 and len(result.findings) == 1
    report = result.report()
    assert "b'TRIP wire'" in report and "RuntimeError: tripped" in report
    assert f"tests/fuzz/launch.py tripwire {result.findings[0]}" in report
