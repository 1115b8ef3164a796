"""The C line loop reads the correlator's state by name, through catalog/native_state.py's classes: the fields
they declare are exactly the ones the C code reads (its PLAN_STATE_FIELDS, PLAN_FIELDS and KEPT_STATE_FIELDS),
and a state missing any one of them, or a plan type without one of a plan's fields, is refused when a scanner
binds it, with a TypeError that names the field: a rename fails at once, not as a crash further on."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from catalog import native
from catalog.native_state import KeptState, PlanState
from correlator import reading
from correlator.kept import KeptContext
from correlator.speakers import Who
from scan.engine import default_matcher


def _linescan() -> Any:
    module = pytest.importorskip("catalog._linescan", reason="the C line loop is built only where libhs is installed")
    with native.switched(True):
        assert native.linescan() is module
    return module


def _plan_state() -> PlanState:
    return reading.SourceScanner(default_matcher(), "a.log", Who(), 2026)._plan_state


def _without(state: Any, missing: str) -> Any:
    """A stand-in for ``state`` with every field of it but ``missing``."""
    names = [f.name for f in fields(state) if f.name != missing]
    stand_in = type("Partial", (), {"__slots__": tuple(names)})()
    for name in names:
        setattr(stand_in, name, getattr(state, name))
    return stand_in


def test_the_declared_fields_are_the_ones_c_reads() -> None:
    module = _linescan()
    assert [f.name for f in fields(PlanState)] == list(module.PLAN_STATE_FIELDS)
    assert [f.name for f in fields(KeptState)] == list(module.KEPT_STATE_FIELDS)
    assert [f.name for f in fields(reading._Plan)] == list(module.PLAN_FIELDS)  # what C sets on each plan


@pytest.mark.parametrize("missing", [f.name for f in fields(PlanState)])
def test_a_plan_state_without_a_field_is_refused_by_name(missing: str) -> None:
    module = _linescan()
    state = _plan_state()
    assert callable(module.planner(_without(state, "nothing")))  # the stand-in itself binds
    with pytest.raises(TypeError, match=f"planner: the state has no field '{missing}'"):
        module.planner(_without(state, missing))


@pytest.mark.parametrize("missing", [f.name for f in fields(KeptState)])
def test_a_kept_state_without_a_field_is_refused_by_name(missing: str) -> None:
    module = _linescan()
    assert callable(module.keeper(_without(KeptState(), "nothing")))
    with pytest.raises(TypeError, match=f"keeper: the state has no field '{missing}'"):
        module.keeper(_without(KeptState(), missing))


@pytest.mark.parametrize("missing", [f.name for f in fields(reading._Plan)])
def test_a_plan_type_without_a_field_is_refused_by_name(missing: str) -> None:
    module = _linescan()
    state = _plan_state()
    state.plan_type = type("Plan", (), {"__slots__": tuple(f.name for f in fields(reading._Plan) if f.name != missing)})
    with pytest.raises(TypeError, match=f"plan_type Plan has no field '{missing}'"):
        module.planner(state)


@pytest.mark.parametrize(("name", "value", "what"), [("records", {}, "a list"), ("first", [], "a dict"),
                                                     ("errors_dropped", "0", "an int")])
def test_a_kept_field_of_the_wrong_type_is_refused_by_name(name: str, value: Any, what: str) -> None:
    module = _linescan()
    state = KeptState()
    setattr(state, name, value)
    with pytest.raises(TypeError, match=f"the state's field '{name}' must be {what}"):
        module.keeper(state)


def test_the_c_loop_counts_dropped_errors_on_the_state_it_was_bound_to() -> None:
    module = _linescan()
    kept = KeptContext()
    keep = module.keeper(kept.state)
    from correlator.kept import MAX_ERROR_ROWS

    for k in range(MAX_ERROR_ROWS + 3):
        keep([("errorish", {}, ("errorish", Who(rank=1), f"t{k}", 2, False))], "a.log", k, Who(rank=1), None, "x",
             k << 4)
    assert kept.errors_dropped == 3 and len(kept.state.errors) == MAX_ERROR_ROWS
    assert len(kept.records()) == MAX_ERROR_ROWS


def test_the_c_setup_takes_its_arguments_by_name_and_refuses_them_by_position() -> None:
    """configure_who and configure_kept hand the C loop Python types and tables: by position, a reordered or
    renamed argument would bind the wrong object silently; by name, it is a TypeError at once."""
    from datetime import UTC

    from correlator.kept import FIRST_ONLY_KINDS, MAX_ERROR_ROWS, ContextRecord
    from correlator.timestamps import Stamp

    module = _linescan()
    with pytest.raises(TypeError):
        module.configure_kept(ContextRecord, FIRST_ONLY_KINDS, MAX_ERROR_ROWS)
    with pytest.raises(TypeError, match="max_error_rows"):
        module.configure_kept(record_type=ContextRecord, first_only_kinds=FIRST_ONLY_KINDS)
    with pytest.raises(TypeError, match="memo_max"):
        module.configure_who(who_type=Who, stamp_type=Stamp, utc=UTC, not_hosts=frozenset(), glog_memo={})
    # and the setup the scanners use still holds: a scanner made now keeps lines through the C loop
    module.configure_kept(record_type=ContextRecord, first_only_kinds=FIRST_ONLY_KINDS, max_error_rows=MAX_ERROR_ROWS)
    kept = KeptContext()
    keep = module.keeper(kept.state)
    keep([("nccl_version", {"version": "2.21.5"}, ("nccl_version", (("version", "2.21.5"),), Who()))], "a.log", 1,
         Who(), None, "NCCL version 2.21.5", 0)
    assert [r.kind for r in kept.records()] == ["nccl_version"]
