"""The one clock: what "now" is, for every stage that needs it (the pipeline, its schedulers, the outbox, the
API, the CLI). The core never reads it: time is an argument there.

A clock is anything called with no arguments that returns an aware UTC datetime. ``system_clock`` is the wall;
``ManualClock`` is the tests' (and benches'): it stands still until told to move, so "30 s later" is a statement
in the test, not a sleep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def __call__(self) -> datetime: ...


def system_clock() -> datetime:
    return datetime.now(UTC)


def _fixed_start() -> datetime:
    return datetime(2026, 11, 29, 10, 30, tzinfo=UTC)  # any fixed instant: the same every run


@dataclass
class ManualClock:
    now: datetime = field(default_factory=_fixed_start)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
