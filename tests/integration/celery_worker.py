"""Start and stop real Celery worker processes for integration tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def service_env(db_url: str, broker_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env.update({"FIRSTFAULT_DATABASE_URL": db_url, "FIRSTFAULT_BROKER_URL": broker_url,
                "FIRSTFAULT_GROUP_WAIT_S": "2", "FIRSTFAULT_REVISE_WAIT_S": "1",
                "FIRSTFAULT_VISIBILITY_TIMEOUT_S": "4", "FIRSTFAULT_REDELIVERY_CHECK_S": "1", "PYTHONPATH": str(ROOT)})
    env.update(extra)
    return env


class Worker:
    """A `celery -A workers.app worker` process on the queue its environment names."""

    def __init__(self, env: Mapping[str, str], log: Path) -> None:
        self.log = log
        self._out = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--pool=solo",
             "-Q", env.get("FIRSTFAULT_QUEUE", "firstfault"), "--without-gossip", "--without-mingle",
             "--without-heartbeat", "-l", "info"],
            cwd=ROOT, env=dict(env), stdout=self._out, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._out.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if not self._out.closed:
            self._out.close()


def wait_for(predicate, timeout: float, what: str, every: float = 0.2):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
