"""What the embedded runner holds of its shards, by the bytes the producer packed them into, and the back-pressure
that bounds it.

The runner's queue is bounded by a count of messages, but a shard leaves the queue long before it is done: up to
`2 * workers` batches of 64 are out in the scan processes, and the scans that came back wait to be stored. Each
of those still holds its packed data (up to 1 MiB a shard, which inflates to up to 16 MiB while it is scanned),
so a count says little about memory, and nothing about how long the last shard of a burst waits: the time from
a job's last shard to its incident is the backlog ahead of that shard, scanned and stored, then one correlation.

A Backlog counts every message from the moment it is admitted until it is done (a shard stored or dead-lettered):
queued, out for its scan, or waiting to be stored. When admitting one would take it past `max_items` messages or
`max_bytes` of shard data, the producer waits
(the HTTP ingest's request, in a thread of its own), then is refused with RetryableError (503 + Retry-After), as
the Kafka consumer's pause or Celery's prefetch bound the distributed mode's. One shard is always admitted when
nothing is held, however large, so that a shard larger than the budget is not refused for ever.
"""

from __future__ import annotations

import threading
import time


class Backlog:
    """At most `max_items` messages and `max_bytes` of shard data, with hysteresis: once a producer finds no room,
    producers wait until the backlog has drained to half of both, then go on. Let in one message per freed slot,
    a producer woke, took the interpreter's lock from the thread storing, queued one shard and slept again for
    every shard stored: at 4,096 ranks it was let in slower than the service stored, and the service starved."""

    def __init__(self, max_bytes: int, max_items: int) -> None:
        self.max_bytes, self.max_items = max_bytes, max_items
        self._bytes = self._items = 0
        self._peak = 0  # the most bytes ever held at once: what a test or an operator checks the bound against
        self._full = False  # a producer found no room: every producer waits until half is drained
        self._waiting = 0  # producers waiting for room now
        self.waits = 0  # producers that had to wait for room, ever: how often the service pushed back
        self._changed = threading.Condition()

    @property
    def held(self) -> int:
        """Bytes held now."""
        return self._bytes

    @property
    def items(self) -> int:
        return self._items

    @property
    def peak(self) -> int:
        return self._peak

    @property
    def waiting(self) -> int:
        return self._waiting

    def admit(self, size: int, timeout: float) -> bool:
        """Hold one more message of `size` bytes once there is room, waiting at most `timeout` seconds; False when
        there was none in time (nothing is held for it then)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            if self._full or not self._fits(size):
                self.waits += 1
            while self._full or not self._fits(size):
                if not self._items:  # nothing held: let it in, however large, or it would wait for ever
                    self._full = False
                    break
                self._full = True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._waiting += 1
                try:
                    self._changed.wait(left)
                finally:
                    self._waiting -= 1
            self._items += 1
            self._bytes += size
            self._peak = max(self._peak, self._bytes)
            return True

    def release(self, size: int) -> None:
        """A message admitted with `size` is done with (stored, dead-lettered, run, or never queued)."""
        with self._changed:
            self._items -= 1
            self._bytes -= size
            if self._full and self._items <= self.max_items // 2 and self._bytes <= self.max_bytes // 2:
                self._full = False
                self._changed.notify_all()

    def _fits(self, size: int) -> bool:
        return self._items < self.max_items and self._bytes + size <= self.max_bytes
