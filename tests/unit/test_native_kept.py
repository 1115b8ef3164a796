"""A line's context records kept in C (catalog._linescan.keeper(state): keep_line bound to a KeptState) as
KeptContext.keep_line keeps them in Python: the same records in the same order, the same first and latest occurrences
and repeat counts, the same error rows dropped past MAX_ERROR_ROWS, on random lines of every kind of row and on a
whole generated job."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from catalog import native
from catalog.native import switched
from correlator import reading
from correlator.kept import FIRST_ONLY_KINDS, FOLDED_KINDS, MAX_ERROR_ROWS, KeptContext, line_keeper
from correlator.speakers import Who
from scan.engine import default_matcher, scan_source
from simulate.training_logs import generate
from sources.files import Source, chunks


def _native() -> Any:
    linescan: Any = pytest.importorskip("catalog._linescan", reason="the C functions are built only where libhs is")
    with switched(True):
        native.linescan()  # set up: handed its types, as a scanner made now would be
    return linescan.keeper


def _state(kept: KeptContext) -> tuple[Any, ...]:
    state = kept.state
    return (kept.records(), state.first, state.last, {row: (rec, n) for row, (rec, n) in state.errors.items()},
            kept.errors_dropped)


def _random_line(rng: random.Random, k: int) -> tuple[list[tuple[str, dict[str, Any], Any]], Who]:
    who = Who(rank=rng.randrange(3), host=rng.choice(["node1", "node2", None]))
    kinds = [*sorted(FOLDED_KINDS), *sorted(FIRST_ONLY_KINDS), "errorish", "pg_status", "table_rank"]
    contexts = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(kinds)
        captures = {"rank": rng.randrange(4), "detail": rng.choice(["a", "b"])}
        if kind == "errorish":
            row = None if rng.random() < 0.2 else ("errorish", who, f"template {rng.randrange(6)}", 2, False)
        elif kind in FOLDED_KINDS:
            row = (kind, tuple(captures.items()), who)
        else:
            row = None
        contexts.append((kind, captures, row))
    return contexts, who


@pytest.mark.parametrize("seed", range(6))
def test_c_keeps_random_lines_as_python_does(seed: int) -> None:
    native = _native()
    rng = random.Random(seed)
    in_c, in_python = KeptContext(), KeptContext()
    keep = native(in_c.state)
    stamp = datetime(2026, 12, 2, tzinfo=UTC)
    later = list(range(16 * 2000, 16 * 4000, 16))
    rng.shuffle(later)  # the settle path reports latest occurrences out of order
    positions = [*range(0, 16 * 2000, 16), *later]
    for k, at in enumerate(positions):
        contexts, who = _random_line(rng, k)
        args = (contexts, "a.log", k + 1, who, stamp if k % 3 else None, f"line {k}", at)
        keep(*args)
        KeptContext.keep_line(in_python, *args)
    assert _state(in_c) == _state(in_python)
    assert in_c.state.last and in_c.state.first and in_c.state.errors  # every path was taken


def test_error_rows_past_the_limit_are_counted_as_dropped() -> None:
    native = _native()
    in_c, in_python = KeptContext(), KeptContext()
    keep = native(in_c.state)
    for k in range(MAX_ERROR_ROWS + 50):
        args = ([("errorish", {}, ("errorish", Who(rank=1), f"t{k}", 2, False))], "a.log", k, Who(rank=1), None,
                "x", k << 4)
        keep(*args)
        KeptContext.keep_line(in_python, *args)
    assert in_c.errors_dropped == in_python.errors_dropped == 50
    assert _state(in_c) == _state(in_python)


def test_a_job_scanned_through_either_keeps_the_same_records(tmp_path: Path) -> None:
    _native()
    generate(tmp_path, ranks=16, size=600_000, seed=5, failure="oom_kill", quiet=True)
    matcher = default_matcher()
    paths = sorted((tmp_path / "logs").rglob("*.log"))

    def scanned() -> list[Any]:
        return [scan_source(matcher, p.name, chunks(Source(p.name, p)), 2026).context for p in paths]

    kept = KeptContext()
    assert getattr(line_keeper(kept, native.linescan()), "__self__", kept) is not kept  # bound to its state, in C
    through_c = scanned()
    with switched(False):
        assert line_keeper(kept, native.linescan()) == kept.keep_line
        assert through_c == scanned()
    assert sum(map(len, through_c)) > 100


def test_the_scanner_keeps_records_through_c_where_it_is_switched_on() -> None:
    _native()
    scanner = reading.SourceScanner(default_matcher(), "a.log", Who(), 2026)
    assert type(scanner._keep_line).__name__ == "builtin_function_or_method"
    with switched(False):
        scanner = reading.SourceScanner(default_matcher(), "a.log", Who(), 2026)
        assert scanner._keep_line == scanner._context.keep_line


def test_keep_line_refuses_what_is_not_a_kept_context() -> None:
    native = _native()
    with pytest.raises(TypeError, match="no field 'records'"):
        native(object())
    with pytest.raises(TypeError, match="no field 'first'"):
        native(KeptContext())  # the context (whose records is a method), not its state
    with pytest.raises(TypeError):
        native(KeptContext().state)([("nccl_ring", {})], "a.log", 1, Who(), None, "x", 0)
