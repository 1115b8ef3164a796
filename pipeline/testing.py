"""The in-memory Scheduler, for tests and benches: it keeps what it is asked to schedule and runs nothing itself,
so a test reads what the Pipeline decided, and when (by the Pipeline's clock: schemas.clock.ManualClock).

tests/pipeline/test_handoff_contract.py runs it beside the embedded timer (pipeline/embedded.py) and the Celery
countdown (workers/dispatch.py) in one suite.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class RecordingScheduler:
    calls: list[tuple[str, datetime]] = field(default_factory=list)  # (job id, at), in the order asked

    def correlate_at(self, job_id: str, at: datetime, headers: Mapping[str, str]) -> None:
        self.calls.append((job_id, at))

    def due(self, now: datetime) -> list[str]:
        """The job ids whose correlation would have run by `now`, earliest first."""
        return [job for job, at in sorted(self.calls, key=lambda call: call[1]) if at <= now]
