"""What the embedded runner holds of its shards, by the bytes the producer packed them into, and the back-pressure
that bounds it.

The runner's queue is bounded by a count of messages, but a shard leaves the queue long before it is done: up to
`2 * workers` batches of 64 are out in the scan processes, and the scans that came back wait to be stored. Each
of those still holds its packed data (up to 1 MiB a shard, which inflates to up to 16 MiB while it is scanned),
so a count says little about memory, and nothing about how long the last shard of a burst waits: the time from
a job's last shard to its incident is the backlog ahead of that shard, scanned and stored, then one correlation.

A Backlog counts every shard from the moment it is admitted until it is stored (or dead-lettered): queued, out
for its scan, or waiting to be stored. When admitting a shard would take it past `max_bytes`, the producer waits
(the HTTP ingest's request, in a thread of its own), then is refused with RetryableError (503 + Retry-After), as
the Kafka consumer's pause or Celery's prefetch bound the distributed mode's. One shard is always admitted when
nothing is held, however large, so that a shard larger than the budget is not refused for ever.
"""

from __future__ import annotations

import threading
import time


class Backlog:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._held = 0
        self._peak = 0  # the most ever held at once: what a test or an operator checks the bound against
        self._waiting = 0  # submits waiting for room now
        self.waits = 0  # submits that had to wait for room, ever: how often producers were held back
        self._changed = threading.Condition()

    @property
    def held(self) -> int:
        return self._held

    @property
    def peak(self) -> int:
        return self._peak

    @property
    def waiting(self) -> int:
        return self._waiting

    def admit(self, size: int, timeout: float) -> bool:
        """Hold `size` more bytes once there is room, waiting at most `timeout` seconds; False when there was
        none in time (nothing is held then)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            if self._held and self._held + size > self.max_bytes:
                self.waits += 1
            while self._held and self._held + size > self.max_bytes:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._waiting += 1
                try:
                    self._changed.wait(left)
                finally:
                    self._waiting -= 1
            self._held += size
            self._peak = max(self._peak, self._held)
            return True

    def release(self, size: int) -> None:
        """A shard admitted with `size` is done with (stored, dead-lettered, or never queued)."""
        if not size:
            return
        with self._changed:
            self._held -= size
            self._changed.notify_all()
