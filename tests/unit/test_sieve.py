"""Steps that read a few of every rank's lines pick them in C (correlator/sieve.py, packed_text.starting): what they
pick must be what a loop over every item picked, in the same order, or the diagnosis would change (issue 23)."""

from __future__ import annotations

import dataclasses
import random

from correlator.event import Event, Target
from correlator.event_summary import collateral_groups
from correlator.packed_text import packed, starting
from correlator.sieve import SIGNATURE, having, of_entries, replaced, where
from schemas.diagnosis import CollateralGroup
from schemas.findings import Finding, Role, Speaker

_TEXTS = ["(RayTrainWorker pid=12, ip=10.0.0.3) x 5", "(raylet) 7", "x (pid=1)", "12 (pid=3)", "(", "", "no digit",
          "(a\0 9", "[rank3]: 4 (x)", "None (x) 5"]


def _finding(rng: random.Random, i: int) -> Finding:
    return Finding(signature=rng.choice(["a.x", "b.y", "c.z"]), role=Role.COLLATERAL, source=f"n{i % 3}/r{i}.log",
                   line_no=i + 1, text=rng.choice(_TEXTS), speaker=Speaker(rank=rng.choice([None, i]),
                                                                             host=rng.choice([None, "n1", "n2"])),
                   fields={"seq": i} if i % 2 else {}, order=i, repeats=rng.choice([1, 1, 3]))


def test_lines_opening_with_a_prefix_are_those_a_loop_finds_packed_or_not() -> None:
    rng = random.Random(3)
    for _ in range(200):
        findings = [_finding(rng, i) for i in range(rng.randint(0, 12))]
        findings = [packed(f, lambda s: s) if rng.random() < 0.6 else f for f in findings]
        if findings and rng.random() < 0.2:
            findings[0].text = "(pid=9) kept whole after packing"  # a packed finding whose text was set again
        for prefix in ("(", "(r", "x"):
            assert starting(findings, prefix) == [f for f in findings if f.text.startswith(prefix)]


def test_picked_items_and_copies_are_a_loops() -> None:
    rng = random.Random(5)
    findings = [_finding(rng, i) for i in range(50)]
    wanted = {"b.y"}
    assert having(findings, SIGNATURE, wanted) == [f for f in findings if f.signature in wanted]
    assert where(findings, SIGNATURE, wanted) == [i for i, f in enumerate(findings) if f.signature in wanted]
    assert replaced(findings, where(findings, SIGNATURE, wanted), lambda f: f) is None  # nothing changed: no copy
    out = replaced(findings, where(findings, SIGNATURE, wanted), lambda f: dataclasses.replace(f, line_no=0))
    assert out is not None and [f.line_no == 0 for f in out] == [f.signature in wanted for f in findings]


class _Entry:  # a catalog entry as of_entries reads it: by identity, one test each
    def __init__(self, id: str) -> None:
        self.id = id


def _events(rng: random.Random, n: int) -> list[Event]:
    entries = [_Entry("a.x"), _Entry("b.y"), _Entry("c.z")]
    out = []
    for i in range(n):
        f = _finding(rng, i)
        lines = (f,) if rng.random() < 0.7 else (f, _finding(rng, i + 1000))
        ev = Event(f, rng.choice(entries), lines, Target(rng.choice([None, i % 7]), rng.choice([None, "n1", "n2"])))  # type: ignore[arg-type]
        ev.stale = rng.random() < 0.2
        out.append(ev)
    return out


def test_events_of_entries_are_a_loops() -> None:
    events = _events(random.Random(8), 60)
    tested: list[str] = []

    def test(entry: _Entry) -> bool:
        tested.append(entry.id)
        return entry.id != "b.y"

    picked = of_entries(events, test)
    assert picked == [ev for ev in events if ev.signature.id != "b.y"]
    assert sorted(tested) == ["a.x", "b.y", "c.z"]  # each entry asked once


def _groups_by_loop(failures: list[Event], root_events: set[int]) -> list[CollateralGroup]:
    """collateral_groups as it was written, event by event (main before issue 23's columns)."""
    groups: dict[str, tuple[list[int], list[str], list[int]]] = {}
    for ev in failures:
        if id(ev) in root_events or ev.stale:
            continue
        g = groups.setdefault(ev.signature.id, ([], [], [0]))
        if ev.reporter.rank is not None:
            g[0].append(ev.reporter.rank)
        if ev.reporter.host is not None:
            g[1].append(ev.reporter.host)
        g[2][0] += 1 + sum(f.repeats for f in ev.findings)
    out = [CollateralGroup.of(sig, list(set(r)), list(set(h)), n) for sig, (r, h, (n,)) in groups.items()]
    return sorted(out, key=lambda g: -g.count)


def test_collateral_groups_read_by_columns_are_the_loops() -> None:
    rng = random.Random(11)
    for _ in range(100):
        events = _events(rng, rng.randint(0, 40))
        roots = {id(ev) for ev in events if rng.random() < 0.1}
        assert collateral_groups(events, roots) == _groups_by_loop(events, roots)


def test_the_timeline_and_earliest_times_read_by_columns_are_the_loops() -> None:
    import heapq
    from datetime import UTC, datetime, timedelta

    from correlator.event_summary import MAX_TIMELINE, timeline
    from correlator.event_times import wall_times
    from correlator.events import when

    rng = random.Random(13)
    start = datetime(2026, 11, 29, 10, tzinfo=UTC)
    for _ in range(60):
        events = _events(rng, rng.randint(0, 150))
        for ev in events:  # a time or none, a wall clock or another, on a few hosts with offsets
            ev.best.time = start + timedelta(seconds=rng.randint(0, 50)) if rng.random() < 0.8 else None
            ev.best.clock = rng.choice(["wall", "wall", "mono", None])
            ev.best.order = rng.randint(0, 30)  # ties too
        offsets: dict[str | None, timedelta] = {}
        if rng.random() < 0.5:
            offsets["n1"] = timedelta(seconds=rng.randint(-3, 3))
        assert wall_times(events, offsets) == [t for ev in events if (t := when(ev, offsets)) is not None]
        never = datetime.max.replace(tzinfo=None).astimezone()
        first = heapq.nsmallest(MAX_TIMELINE, events, key=lambda ev: (when(ev, offsets) or never, ev.best.order))
        got = timeline(events, set(), offsets)
        assert [(e.source, e.line, e.time) for e in got] == [(ev.best.source, ev.best.line_no, when(ev, offsets))
                                                             for ev in first]
