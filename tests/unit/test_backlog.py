"""The embedded runner's Backlog (pipeline/backlog.py): bounded by messages and bytes, with hysteresis."""

from __future__ import annotations

from pipeline.backlog import Backlog


def test_once_full_it_lets_producers_in_only_when_half_is_drained() -> None:
    backlog = Backlog(max_bytes=100, max_items=4)
    assert all(backlog.admit(10, timeout=0) for _ in range(4))
    assert not backlog.admit(10, timeout=0)  # full: refused after its wait
    backlog.release(10)
    assert not backlog.admit(10, timeout=0)  # a slot is free, but not half: still held back
    backlog.release(10)
    assert backlog.admit(10, timeout=0) and backlog.admit(10, timeout=0)  # half drained: in again, to full
    assert not backlog.admit(10, timeout=0)
    assert (backlog.items, backlog.held, backlog.waits) == (4, 40, 3)


def test_bytes_bound_it_too_and_one_message_larger_than_the_budget_gets_in_alone() -> None:
    backlog = Backlog(max_bytes=100, max_items=1000)
    assert backlog.admit(60, timeout=0) and not backlog.admit(60, timeout=0)
    backlog.release(60)
    assert backlog.admit(500, timeout=0)  # nothing held: let in, or it would wait for ever
    assert not backlog.admit(1, timeout=0)
    assert backlog.peak == 500
