"""Findings and Speakers made in C (catalog._linescan.slotted, bound by correlator.held.native_makers) equal the
ones their dataclasses' own __init__ makes: on generated job logs and the bundled examples the C loop's scan and
the Python path's give equal findings, every slot set, of the same types, pickled back to themselves; and a maker
refuses to bind where it could leave a slot unset or write past one."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from catalog.native import switched
from correlator.held import FINDING_SLOTS, SPEAKER_SLOTS
from correlator.reading import SourceScanner
from correlator.speakers import Who
from scan.engine import default_matcher
from schemas.findings import Finding, Role, Speaker
from simulate.training_logs import generate

ROOT = Path(__file__).resolve().parents[2]


def _slotted() -> Any:
    linescan: Any = pytest.importorskip("catalog._linescan", reason="the C functions are built only where libhs is")
    return linescan.slotted


def _scan(path: Path, native: bool) -> list[Finding]:
    with switched(native):
        scanner = SourceScanner(default_matcher(), str(path), Who(rank=1), 2026, fold_context=True)
        scanner.feed(path.read_bytes())
        return scanner.finish().findings


def _whole(finding: Finding) -> list[Any]:
    return [getattr(finding, f.name) for f in fields(Finding)]  # raises if a slot was left unset


def test_the_slot_names_are_every_field_of_the_classes() -> None:
    assert sorted(FINDING_SLOTS) == sorted(f.name for f in fields(Finding))
    assert sorted(SPEAKER_SLOTS) == sorted(f.name for f in fields(Speaker))
    assert Who._fields == SPEAKER_SLOTS  # _speaker hands a Who's items over in their order


def test_c_made_findings_equal_python_made_ones(tmp_path: Path) -> None:
    _slotted()
    generate(tmp_path, ranks=8, size=300_000, seed=4, failure="cuda_oom", quiet=True)
    paths = sorted([*(tmp_path / "logs").rglob("*.log"), *(ROOT / "examples").rglob("*.log")])
    compared = 0
    for path in paths:
        made, reference = _scan(path, True), _scan(path, False)
        assert made == reference, path
        for got, want in zip(made, reference, strict=True):
            assert type(got) is Finding and type(got.speaker) is Speaker
            assert [type(v) for v in _whole(got)] == [type(v) for v in _whole(want)], path
            assert pickle.loads(pickle.dumps(got)) == got
            assert hash(got.speaker) == hash(want.speaker)
        compared += len(made)
    assert compared > 100


def test_a_maker_sets_the_slots_it_names() -> None:
    make = _slotted()(Speaker, SPEAKER_SLOTS)
    speaker = make(3, "node1", 77, 1, 0)  # frozen: set as its __init__ sets it, past __setattr__
    assert speaker == Speaker(rank=3, host="node1", pid=77, device=1, local_rank=0)
    finding = _slotted()(Finding, FINDING_SLOTS)("sig", False, Role.CONTEXT, "a.log", 3, "text", speaker, None,
                                                  None, {}, 1, 3, 0)
    assert finding == Finding(signature="sig", role=Role.CONTEXT, source="a.log", line_no=3, text="text",
                              speaker=speaker, order=1, event=3)
    with pytest.raises(TypeError):
        make(3, "node1", 77, 1)  # a value short


@dataclass(slots=True)
class _Two:
    a: int
    b: int


class _Plain:
    a: int


def test_a_maker_refuses_what_could_leave_a_slot_unset() -> None:
    slotted = _slotted()
    assert slotted(_Two, ("b", "a"))(1, 2) == _Two(a=2, b=1)
    for names in [("a",), ("a", "a"), ("a", "b", "c"), ("a", "__class__")]:
        with pytest.raises(TypeError):
            slotted(_Two, names)
    with pytest.raises(TypeError):
        slotted(_Plain, ("a",))  # an instance __dict__: not a slotted class
