"""One retry policy type for every stage (issue 24): the schedules each stage documents, Celery's own backoff
function computing the same waits from the tasks' options, and a server's Retry-After winning."""

from __future__ import annotations

import random

import pytest
from celery.utils.time import get_exponential_backoff_interval

from schemas.retry import CONSUMER, EMBEDDED, OUTBOX, SHIP, TASKS, RetryPolicy
from workers.tasks import RETRY


def test_each_stage_waits_what_its_docs_say() -> None:
    assert [EMBEDDED.delay(n) for n in range(4)] == [0.5, 1.0, 2.0, 4.0]
    assert EMBEDDED.exhausted(5) and not EMBEDDED.exhausted(4)  # the fifth failure is a dead letter
    assert [OUTBOX.delay(n) for n in (1, 2, 3)] == [10.0, 20.0, 40.0] and OUTBOX.delay(12) == 1200.0
    assert OUTBOX.exhausted(12) and not OUTBOX.exhausted(11)
    assert CONSUMER.delay(10_000) == 30.0 and not CONSUMER.exhausted(10**9)  # a batch is never given up
    assert [SHIP.delay(n) for n in range(3)] == [0.5, 1.0, 2.0] and SHIP.exhausted(4) and not SHIP.exhausted(3)


def test_the_celery_tasks_back_off_as_the_policy_says() -> None:
    options = {k: v for k, v in RETRY.items() if k != "autoretry_for"}
    assert options == TASKS.celery_options()
    plain = RetryPolicy(TASKS.base_s, TASKS.max_s, TASKS.max_attempts)  # jitter aside, the same curve
    for retries in range(12):
        assert plain.delay(retries) == get_exponential_backoff_interval(
            int(options["retry_backoff"]), retries, options["retry_backoff_max"], full_jitter=False)
    rng = random.Random(7)
    assert all(0 <= TASKS.delay(n, rng=rng) <= min(60.0, 2.0**n) for n in range(12))


def test_a_servers_retry_after_wins_and_bad_celery_policies_are_refused() -> None:
    assert OUTBOX.delay(5, retry_after=7.0) == 7.0 and EMBEDDED.delay(0, retry_after=3.0) == 3.0
    assert EMBEDDED.delay(2, retry_after=0.0) == 2.0  # no usable Retry-After: the curve
    with pytest.raises(ValueError):
        EMBEDDED.celery_options()  # half a second is not a factor Celery can take
    with pytest.raises(ValueError):
        CONSUMER.celery_options()
