"""A distinct line's plan (who said it, when, its text, each context record's fold row) made in C
(catalog._linescan.planner(state): plan_for bound to a PlanState) equals the one SourceScanner._plan_for makes in
Python, field by field and type by type, on generated job logs, the bundled examples and the catalog's examples, with
siblings sharing one LineMatch; both remember plans and speakers alike, forget them at the same limit, and keep no
plan of a truncated line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from catalog import native
from catalog.matcher import MAX_LINE_CHARS, Matcher
from catalog.native import switched
from correlator import reading
from correlator.reading import SourceScanner
from correlator.speakers import Who
from scan.engine import default_matcher
from simulate.training_logs import generate

ROOT = Path(__file__).resolve().parents[2]


def _native() -> Any:
    linescan: Any = pytest.importorskip("catalog._linescan", reason="the C functions are built only where libhs is")
    with switched(True):
        native.linescan()  # set up: handed its types, as a scanner made now would be
    return linescan.planner


def _pair(matcher: Matcher, base: Who, fold: bool) -> tuple[SourceScanner, SourceScanner]:
    return (SourceScanner(matcher, "a.log", base, 2026, fold_context=fold),
            SourceScanner(matcher, "a.log", base, 2026, fold_context=fold))


def _same_plan(got: Any, want: Any, line: bytes) -> None:
    assert type(got) is type(want), line
    for name in ("who", "stamp", "text", "raw", "contexts", "folded_only"):
        mine, theirs = getattr(got, name), getattr(want, name)
        assert mine == theirs, (name, line)
        assert type(mine) is type(theirs), (name, line)
    for (_, captures, row), (_, captures2, row2) in zip(got.contexts, want.contexts, strict=True):
        assert type(captures) is type(captures2) and type(row) is type(row2), line
        if row is not None:
            assert [type(v) for v in row] == [type(v) for v in row2], line


def _lines(tmp_path: Path) -> list[bytes]:
    generate(tmp_path, ranks=8, size=300_000, seed=9, failure="cuda_oom", quiet=True)
    chunks = [path.read_bytes() for path in sorted([*(tmp_path / "logs").rglob("*.log"),
                                                    *(ROOT / "examples").rglob("*.log")])]
    examples = [text for sig in default_matcher().catalog.signatures
                for text in (*sig.examples.positive, *sig.examples.negative)]
    long_line = "node001:4242:4300 [3] NCCL INFO comm 0x1 rank 3 nranks 8 cudaDev 3 busId 1b000 " + "x" * 9000
    chunks.append("\n".join([*examples, long_line]).encode() + b"\n")
    return chunks


def test_c_plans_lines_as_python_does(tmp_path: Path) -> None:
    native = _native()
    matcher = default_matcher()
    compared = siblings = 0
    for buffer in _lines(tmp_path):
        for base, fold in ((Who(), True), (Who(rank=4, host="node9"), False)):
            in_c, in_python = _pair(matcher, base, fold)
            plan_for = native(in_c._plan_state)
            for start, end, lm in matcher.spans(buffer, {}):
                if lm.text[:1].isspace():  # a continuation: the scanner reads its owner line in Python
                    continue
                raw = buffer[start:end]
                got = plan_for(lm, raw)
                _same_plan(got, in_python._plan_for(lm, None, raw), raw)
                assert plan_for(lm, raw) is got or len(lm.text) > MAX_LINE_CHARS  # remembered
                compared += 1
                siblings += matcher.may_be_sibling(lm) and raw != got.raw
            assert in_c._plans.keys() == in_python._plans.keys()
            assert in_c._whos == in_python._whos
    assert compared > 2500 and siblings > 100  # real lines, and siblings read from their own bytes


def test_plans_are_forgotten_at_the_same_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    native = _native()
    matcher = default_matcher()
    buffer = b"".join(b"node001:4242:4300 [3] NCCL INFO comm 0x%d rank %d nranks 8 cudaDev 3 busId 1b000\n" % (k, k)
                      for k in range(7))
    in_c, in_python = _pair(matcher, Who(), True)
    plan_for = native(replace(in_c._plan_state, said_memo=3))  # SAID_MEMO, as Python reads it below
    monkeypatch.setattr(reading, "SAID_MEMO", 3)
    for start, end, lm in matcher.spans(buffer, {}):
        plan_for(lm, buffer[start:end])
        in_python._plan_for(lm, None, buffer[start:end])
        assert in_c._plans.keys() == in_python._plans.keys()
        assert 1 <= len(in_c._plans) <= 3
        assert len(in_c._whos) == len(in_python._whos)


def test_a_truncated_line_keeps_no_plan() -> None:
    native = _native()
    matcher = default_matcher()
    line = b"node001:4242:4300 [3] NCCL INFO comm 0x1 rank 3 nranks 8 cudaDev 3 busId 1b000 " + b"y" * 9000 + b"\n"
    in_c, _ = _pair(matcher, Who(), True)
    [(start, end, lm)] = list(matcher.spans(line, {}))
    assert len(lm.text) > MAX_LINE_CHARS
    plan_for = native(in_c._plan_state)
    first = plan_for(lm, line[start:end])
    assert not in_c._plans and plan_for(lm, line[start:end]) is not first


def test_a_state_of_the_wrong_shape_is_a_type_error() -> None:
    native = _native()
    matcher = default_matcher()
    scanner, _ = _pair(matcher, Who(), True)
    buffer = b"node001:4242:4300 [3] NCCL INFO comm 0x1 rank 3 nranks 8 cudaDev 3 busId 1b000\n"
    [(start, end, lm)] = list(matcher.spans(buffer, {}))
    with pytest.raises(TypeError, match="'plans' must be a dict"):
        native(replace(scanner._plan_state, plans=[]))  # type: ignore[arg-type]  # the wrong type on purpose
    with pytest.raises(TypeError, match="plan_for\\(line_match, raw\\)"):
        native(scanner._plan_state)(tuple(lm)[:5], buffer[start:end])


def test_the_scanner_plans_through_c_where_it_is_switched_on() -> None:
    _native()
    plan_for = SourceScanner(default_matcher(), "a.log", Who(), 2026)._native_plan_for
    assert plan_for is not None and plan_for.__name__ == "plan_for"
    with switched(False):
        assert SourceScanner(default_matcher(), "a.log", Who(), 2026)._native_plan_for is None
