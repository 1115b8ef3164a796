"""The faults bench/faults.py injects, each aimed where it can be: a worker is killed while it is inside the task
the fault names (held there by a table lock on PostgreSQL, so the kill lands mid-task every time, not by luck).
Each returns a line saying what it did."""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.fault_rig import Service
from bench.fault_stack import Stack

HOLD_S = 0.8  # a worker whose newest line says "received" this long is inside the task (blocked on the lock)
AIM_LIMIT_S = 30.0


@contextmanager
def table_locked(stack: Stack, table: str) -> Iterator[None]:
    """Writes to `table` wait until the block ends (reads do not). Taken on the direct connection, not through
    the proxy."""
    import psycopg

    with psycopg.connect(stack.direct_url) as conn:  # not autocommit: the lock lasts until the rollback
        conn.execute(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")
        try:
            yield
        finally:
            conn.rollback()


def _held(workers: list[Service], tasks: tuple[str, ...]) -> Service | None:
    """A worker stuck inside one of `tasks`: its newest task line is that task's "received", unchanged for
    HOLD_S."""
    before = {w.name: w.last_task_line() for w in workers}
    candidates = [w for w in workers if any(f"Task {task}[" in before[w.name] for task in tasks)
                  and before[w.name].endswith("received")]
    if not candidates:
        return None
    time.sleep(HOLD_S)
    return next((w for w in candidates if w.last_task_line() == before[w.name]), None)


def kill_inside(stack: Stack, tasks: tuple[str, ...], table: str) -> str:
    with table_locked(stack, table):
        deadline = time.monotonic() + AIM_LIMIT_S
        while (victim := _held(stack.workers, tasks)) is None:
            if time.monotonic() > deadline:
                return f"no worker was seen inside {' or '.join(tasks)} in {AIM_LIMIT_S:g} s: nothing killed"
            time.sleep(0.05)
        victim.kill()
        line = victim.last_task_line().split("] ", 1)[-1][:90]
    return f"SIGKILL {victim.name} inside {line} (held on a lock on {table})"


def worker_mid_match(stack: Stack) -> str:
    # the consumer's shards in a row go as one match_shards task, a lone shard as match_shard
    return kill_inside(stack, ("firstfault.match_shards", "firstfault.match_shard"), "shards")


def worker_mid_correlate(stack: Stack) -> str:
    return kill_inside(stack, ("firstfault.correlate_job",), "incidents")


def worker_after_slack(stack: Stack) -> str:
    """Slack stores the post and answers; the outbox's record of it waits on a lock; the worker is killed there."""
    import psycopg

    posted = threading.Event()
    holder: dict[str, Any] = {}

    def on_post(message: Any) -> None:
        if posted.is_set() or message.thread_ts is not None:
            return
        conn = psycopg.connect(stack.direct_url)
        conn.execute("LOCK TABLE notification_outbox IN SHARE ROW EXCLUSIVE MODE")
        holder["conn"], holder["message"] = conn, message
        posted.set()

    stack.slack.on_post = on_post
    try:
        if not posted.wait(AIM_LIMIT_S):
            return "no Slack post in time: nothing killed"
        time.sleep(HOLD_S)  # the answer is out; the worker now waits to record it
        victims = [w for w in stack.workers if "Task firstfault.deliver[" in w.last_task_line()
                   and w.last_task_line().endswith("received")]
        for w in victims:
            w.kill()
        payload = (holder["message"].metadata or {}).get("event_payload", {})
        return (f"SIGKILL {', '.join(w.name for w in victims) or 'nobody'} after Slack answered the post of "
                f"{payload.get('incident_id')}, before the outbox recorded it")
    finally:
        stack.slack.on_post = None
        if "conn" in holder:
            holder["conn"].rollback()
            holder["conn"].close()


def worker_unaimed(stack: Stack, kills: int = 4, seed: int = 0) -> str:
    """SIGKILL at random moments, whatever the worker is doing (kombu's pop-then-record gap included)."""
    rng = random.Random(seed)
    names = []
    for _ in range(kills):
        time.sleep(rng.uniform(0.5, 2.0))
        victim = stack.workers[len(names) % len(stack.workers)]
        victim.kill()
        names.append(victim.name)
    return f"SIGKILL {', '.join(names)} at random moments"


def redis_restart(stack: Stack) -> str:
    stack.restart(stack.redis, down_s=2.0)
    kept = "append-only file, fsync every second" if stack.redis_aof else "nothing on disk"
    return f"Redis SIGKILLed, down 2 s, started again ({kept})"


def pg_cut(stack: Stack, down_s: float = 6.0) -> str:
    assert stack.proxy is not None
    stack.proxy.cut()
    time.sleep(down_s)
    stack.proxy.restore()
    return f"every PostgreSQL connection reset and new ones refused for {down_s:g} s (proxy)"


def tansu_restart(stack: Stack) -> str:
    stack.restart(stack.tansu, down_s=2.0)
    return "Tansu SIGKILLed, down 2 s, started again on its S3 log"


def serve_kill(stack: Stack) -> str:
    stack.serve.kill(signal.SIGKILL)
    return "serve SIGKILLed, restarted by the supervisor 1 s later"


def rebalance(stack: Stack, stay_s: float = 8.0) -> str:
    from bench.fault_rig import Service as Svc

    second = Svc("serve2", stack.serve_argv(), stack.env, stack.tmp).start()
    time.sleep(stay_s)
    second.close()
    return f"a second serve joined the consumer group for {stay_s:g} s, then left (SIGTERM)"


FAULTS: dict[str, Callable[[Stack], str]] = {
    "worker_mid_match": worker_mid_match,
    "worker_mid_correlate": worker_mid_correlate,
    "worker_after_slack": worker_after_slack,
    "worker_unaimed": worker_unaimed,
    "redis_restart": redis_restart,
    "pg_cut": pg_cut,
    "tansu_restart": tansu_restart,
    "serve_kill": serve_kill,
    "rebalance": rebalance,
}
