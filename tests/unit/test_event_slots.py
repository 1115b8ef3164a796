"""Event keeps its flags as bits and its rare fields as one shared pair (issue 23: an event takes the 112-byte
blocks the context records let go of free), and reads, compares and prints as the dataclass of its fields did."""

from __future__ import annotations

import sys

from catalog.loader import default_catalog
from correlator.event import Event, Target
from schemas.findings import Finding, Role


def _event(**extra: object) -> Event:
    sig = default_catalog().get("pytorch.c10d.watchdog_timeout")
    assert sig is not None
    f = Finding(signature=sig.id, role=sig.role, source="rank1.log", line_no=3, text="watchdog")
    return Event(f, sig, (f,), Target(1, "node001"), **extra)  # type: ignore[arg-type]


def test_an_event_is_one_112_byte_block() -> None:
    assert sys.getsizeof(_event()) <= 112  # the collector's header included: pymalloc's 112-byte size class


def test_flags_and_rare_fields_read_back_as_set() -> None:
    ev = _event(stale=True, absence=True)
    assert (ev.stale, ev.about_peer, ev.survivor, ev.absence) == (True, False, False, True)
    ev.stale, ev.survivor, ev.about_peer = False, True, True
    assert (ev.stale, ev.about_peer, ev.survivor, ev.absence) == (False, True, True, True)
    assert ev.unmapped_peer is None and ev.waits_on is None
    ev.unmapped_peer = "10.0.0.9"
    ev.waits_on = (Target(0, None), ev.best)
    assert ev.unmapped_peer == "10.0.0.9" and ev.waits_on == (Target(0, None), ev.best)
    ev.unmapped_peer = None
    ev.waits_on = None
    assert ev._rare is _event()._rare  # back to the shared pair
    assert ev.role is Role.COLLATERAL and ev.weight is None and ev.reason is None


def test_equal_field_by_field_and_printed_as_a_dataclass() -> None:
    a, b = _event(weight=1.0, reason="r"), _event(weight=1.0, reason="r")
    assert a == b and a is not b and a in [b]
    b.stale = True
    assert a != b
    assert repr(a).startswith("Event(best=Finding(") and repr(a).endswith("absence=False, role=<Role.COLLATERAL: "
                                                                            "'collateral'>)")


def test_a_one_line_events_findings_are_made_when_read() -> None:
    ev = _event()
    assert ev.findings == (ev.best,) and ev._findings is None
    listed = Event(ev.best, ev.signature, [ev.best], ev.reporter)  # derived evidence passes a list: kept as given
    assert listed.findings == [ev.best] and listed != ev
    two = (ev.best, ev.best)
    assert Event(ev.best, ev.signature, two, ev.reporter).findings is two
