"""One retry policy type for every stage: the embedded queue, the Celery tasks, the Kafka consumer, the outbox and
the HTTP shipper.

A RetryableError is tried again after ``min(max_s, base_s * 2**n)`` seconds on its n-th retry (n from 0), the
formula Celery's autoretry uses (celery.utils.time.get_exponential_backoff_interval), so the tasks' options are
this policy's too; ``jitter`` draws the wait uniformly from [0, that] ("full jitter", as Celery's retry_jitter).
A server's own Retry-After wins over the formula: it knows when it can take the request again. ``max_attempts``
counts the first try; None retries for ever (the consumer never gives up a batch: it would lose it). Pure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RetryPolicy:
    base_s: float
    max_s: float
    max_attempts: int | None
    jitter: bool = False

    def delay(self, retries: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds before the next try, after ``retries`` failed retries (0 after the first failure)."""
        if retry_after is not None and retry_after > 0:
            return retry_after
        wait = min(self.max_s, self.base_s * 2 ** min(retries, 62))
        return (rng or random).uniform(0, wait) if self.jitter else wait

    def exhausted(self, attempts: int) -> bool:
        """Whether ``attempts`` tries (the first included) are all this policy allows."""
        return self.max_attempts is not None and attempts >= self.max_attempts

    def celery_options(self) -> dict[str, Any]:
        """The same policy as a Celery task's autoretry options (Celery takes a whole-second factor)."""
        if self.max_attempts is None or self.base_s != int(self.base_s) or self.base_s < 1:
            raise ValueError("Celery's autoretry needs a whole-second base and a bounded number of attempts")
        return {"retry_backoff": int(self.base_s), "retry_backoff_max": int(self.max_s),
                "max_retries": self.max_attempts - 1, "retry_jitter": self.jitter}


# A task of the embedded queue: 0.5, 1, 2, 4 s, then its dead letter (the queue is in memory: fail soon, loudly).
EMBEDDED = RetryPolicy(base_s=0.5, max_s=30.0, max_attempts=5)
# A Celery task: 1, 2, 4 ... 60 s with full jitter, 11 tries, then its dead letter.
TASKS = RetryPolicy(base_s=1.0, max_s=60.0, max_attempts=11, jitter=True)
# The Kafka consumer's batch: 0.5 s doubling to 30 s, for as long as it takes (a batch is never dropped).
CONSUMER = RetryPolicy(base_s=0.5, max_s=30.0, max_attempts=None)
# An outbox delivery: 10, 20, 40 s ... up to 20 minutes (PagerDuty advises minutes of backoff), 12 tries.
OUTBOX = RetryPolicy(base_s=5.0, max_s=20 * 60.0, max_attempts=12)
# `firstfault ship` over HTTP (and the collectors, which send fewer tries): 0.5, 1, 2 s, 4 tries, then its error
# (a person or a job's epilog is waiting on it). Like the consumer, it waits at least that even when told sooner.
SHIP = RetryPolicy(base_s=0.5, max_s=30.0, max_attempts=4)
