"""One switch (catalog/native.py) selects the Python path for every function with a C twin at once, read when
work starts: FIRSTFAULT_NATIVE=0, switched(False) and `diagnose --engine hyperscan|re` all turn the C loop off
for matchers, buffers and scanners made after, and the C loop's absence is the same as switching it off."""

from __future__ import annotations

import sys
from pathlib import Path
from types import BuiltinFunctionType
from typing import Any

import pytest

from catalog import lines, matcher, native
from catalog.native import switched
from correlator import reading
from correlator.speakers import Who
from firstfault.cli import main
from scan.engine import default_matcher

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "oom-killed-rank37"


def _linescan() -> Any:
    return pytest.importorskip("catalog._linescan", reason="the C line loop is built only where libhs is installed")


def _where(function: Any) -> str | None:
    """C for a function of catalog._linescan (or one it bound to a scanner's state), else its name."""
    if function is None:
        return None
    return "C" if isinstance(function, BuiltinFunctionType) else function.__qualname__


def _paths() -> dict[str, Any]:
    """What a matcher built now, a buffer scanned now and a scanner made now would run."""
    scanner = reading.SourceScanner(default_matcher(), "a.log", Who(), 2026)
    return {"engine": default_matcher().engine.name, "match_line": _where(matcher._match_line_now()),
            "captures": _where(matcher._captures_now()), "count": _where(lines.newline_counter(native.linescan())),
            "keep": _where(scanner._keep_line), "plan": _where(scanner._native_plan_for),
            "who": _where(scanner._native_who_and_stamp)}


C_PATHS = {"engine": "libhs", "match_line": "C", "captures": "C", "count": "C", "keep": "C", "plan": "C", "who": "C"}
PYTHON_PATHS = {"engine": "hyperscan", "match_line": None, "captures": "_python_captures", "count": "python_count",
                "keep": "KeptContext.keep_line", "plan": None, "who": None}


def test_every_c_function_runs_where_the_switch_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    _linescan()
    monkeypatch.delenv(native.ENV, raising=False)
    assert native.enabled()
    assert _paths() == C_PATHS


@pytest.mark.parametrize("value", ["0", " 0 "])
def test_the_environment_turns_every_one_off_at_call_time(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    _linescan()
    pytest.importorskip("hyperscan")
    monkeypatch.setenv(native.ENV, value)  # after every module was imported: read when work starts
    assert not native.enabled()
    assert _paths() == PYTHON_PATHS
    monkeypatch.setenv(native.ENV, "1")
    assert _paths() == C_PATHS


def test_switched_wins_over_the_environment_and_nests(monkeypatch: pytest.MonkeyPatch) -> None:
    _linescan()
    pytest.importorskip("hyperscan")
    monkeypatch.setenv(native.ENV, "0")
    with switched(True):
        assert native.enabled() and _paths() == C_PATHS
        with switched(False):
            assert _paths() == PYTHON_PATHS
        with switched(None):
            assert native.enabled()
    assert not native.enabled()


def test_a_hidden_extension_is_the_python_path_and_libhs_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("hyperscan")
    monkeypatch.setitem(sys.modules, native.MODULE, None)  # as where setup.py found no libhs headers
    with switched(True):
        assert not native.enabled() and native.linescan() is None
        assert _paths() == PYTHON_PATHS


def test_libhs_switched_off_is_an_import_error_naming_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    _linescan()
    monkeypatch.setenv(native.ENV, "0")
    with pytest.raises(ImportError, match="FIRSTFAULT_NATIVE=0"):
        default_matcher("libhs")


@pytest.mark.parametrize(("engine", "env", "c_loop"), [("hyperscan", None, False), ("re", None, False),
                                                       ("auto", "0", False), ("libhs", "0", True),
                                                       ("auto", None, True)])
def test_diagnose_engine_selects_the_path_of_every_function(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], engine: str,
                                                           env: str | None, c_loop: bool) -> None:
    _linescan()
    pytest.importorskip("hyperscan")
    if env is None:
        monkeypatch.delenv(native.ENV, raising=False)
    else:
        monkeypatch.setenv(native.ENV, env)
    seen: list[tuple[str | None, ...]] = []
    made = reading.SourceScanner.__init__

    def spy(self: reading.SourceScanner, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        seen.append((_where(self._native_plan_for), _where(self._keep_line), _where(self._count_newlines)))

    monkeypatch.setattr(reading.SourceScanner, "__init__", spy)
    assert main(["diagnose", str(EXAMPLE), "--engine", engine, "--format", "json", "--jobs", "1"]) == 0
    assert '"verdict"' in capsys.readouterr().out
    want = ("C", "C", "C") if c_loop else (None, "KeptContext.keep_line", "python_count")
    assert seen and set(seen) == {want}
    assert native.enabled() == (env is None)  # the command's choice lasted as long as the command
