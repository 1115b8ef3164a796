"""The interner's C twins (catalog/_linescan_intern.h and _linescan_packed.h: records, field dicts, findings, the
digit split of a finding's text) give what its Python methods give: on generated job logs and the bundled
examples, results interned on each path are equal, pickle to the same bytes (so they share the same objects), and
keep the same types; and the odd values (a value that cannot be hashed, a dict subclass, a short tuple, a NUL,
non-ASCII digits) take the Python path's way."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from catalog.native import switched
from correlator import interned
from correlator.interned import Interner
from correlator.kept import ContextRecord
from correlator.packed_text import digit_runs
from correlator.speakers import Who
from scan.engine import default_matcher
from scan.source import order_base, scan_source
from schemas.findings import Finding
from simulate.training_logs import generate

ROOT = Path(__file__).resolve().parents[2]


def _linescan() -> Any:
    return pytest.importorskip("catalog._linescan", reason="the C functions are built only where libhs is")


_KEPT_TEXT: Any = Finding.__dict__["text"]  # the slot: a packed finding's digits


def _interned(paths: list[Path], native: bool) -> bytes:
    """The interned results pickled, with how each finding keeps its text (a packed one pickles whole)."""
    with switched(native):
        matcher, interner = default_matcher(), Interner()
        results = [interner.result(scan_source(matcher, str(path), [path.read_bytes()], 2026, order_base(k)))
                   for k, path in enumerate(paths)]
    kept = [(type(f).__name__, _KEPT_TEXT.__get__(f), getattr(f, "_skeleton", None))
            for r in results for f in r.findings]
    return pickle.dumps((results, kept), protocol=pickle.HIGHEST_PROTOCOL)


def test_c_interning_equals_python_interning(tmp_path: Path) -> None:
    _linescan()
    generate(tmp_path, ranks=8, size=300_000, seed=4, failure="cuda_oom", quiet=True)
    paths = sorted([*(tmp_path / "logs").rglob("*.log"), *(ROOT / "examples").rglob("*.log")])
    made, reference = _interned(paths, True), _interned(paths, False)
    assert made == reference  # one pickle: equal values, and shared where the Python path shares them
    results, kept = pickle.loads(made)
    assert sum(len(r.context) for r in results) > 100
    assert any(name == "PackedFinding" for name, _, _ in kept) and any(name == "Finding" for name, _, _ in kept)
    assert all(type(rec) is ContextRecord for r in results for rec in r.context)


def test_c_memos_turn_their_generations_as_python_ones_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _linescan()
    monkeypatch.setattr(interned, "RECENT", 8)  # every memo fills a generation many times over
    generate(tmp_path, ranks=8, size=200_000, seed=5, failure="cuda_oom", quiet=True)
    paths = sorted((tmp_path / "logs").rglob("*.log"))
    assert _interned(paths, True) == _interned(paths, False)


def test_c_records_share_as_python_records_do() -> None:
    _linescan()
    who = Who(rank=4097, host="node7", pid=70001)
    rows = [("nccl_ring", {"ring": 3, "peer": 4098}, "a.log", 5, who, None, "ring text", 1),
            ContextRecord("errorish", {"x": [1]}, "a.log", 6, Who(rank=4097, host="node7", pid=70001), None, "err"),
            ("pg_status", {}, "b.log", 7, who, None, "status", 2)]
    with switched(True):
        fast = Interner()
        made = fast.records([*rows, *rows])
    with switched(False):
        slow = Interner()
        want = [slow.record(rec) for rec in [*rows, *rows]]
    assert made == want and [type(r) for r in made] == [type(r) for r in want] == [ContextRecord] * 6
    assert made[0].text == "" and made[0].fields is made[3].fields  # text unread; one dict for equal fields
    assert made[1].fields is rows[1][1]  # a list cannot be hashed: kept as it is
    assert made[0].who is made[1].who  # one speaker
    assert pickle.dumps(made) == pickle.dumps(want)
    with pytest.raises(ValueError):
        fast.records([("short",)])  # not a record: the Python method's own error


class _Fields(dict[str, Any]):
    pass


def test_c_fields_take_the_python_way_for_odd_dicts() -> None:
    _linescan()
    with switched(True):
        interner = Interner()
        first = interner.fields({"a": 1, "b": 300})
        assert interner.fields({"a": 1, "b": 300}) is first
        assert interner.fields({"a": True, "b": 300}) is not first  # True == 1, but not the same field
        assert interner.fields({}) is interner.fields({})
        odd = _Fields(a=1)
        assert interner.fields(odd) == {"a": 1}
        unhashable = {"a": [1]}
        assert interner.fields(unhashable) is unhashable


@pytest.mark.parametrize("text", ["rank 12 pid 3456 at x9", "no digits", "", "7", "12ab345", "a\0 1",
                                  "\u00e9 12 \u00fc3", "\u20ac1 2", "\U0001f600 99", "\u0663 4", "0x1f 0", "trail 1",
                                  "1 lead"])
def test_the_c_digit_split_is_the_regex_one(text: str) -> None:
    assert _linescan().digit_runs(text) == digit_runs(text)
