"""The distributed pipeline as separate processes the fault harness can kill: an S3 stand-in (moto) holding Tansu's
log, Tansu, a Redis of its own, a TCP proxy in front of PostgreSQL, `firstfault serve`, Celery workers and beat,
each restarted when it exits (as compose's `restart: unless-stopped` and the systemd units do), and a Slack
stand-in (tests/fakes/slack_api.py) in this process. See bench/README.md, "Faults under load".
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

# the local services' helpers the integration tests use too
from tests.services import ROOT, TcpProxy, free_port, make_bucket, python_env, s3_env, tansu_binary, wait_port

__all__ = ["ROOT", "PgProxy", "Service", "celery", "free_port", "make_bucket", "python_env", "s3_env",
           "tansu_binary", "wait_port"]

class Service:
    """One child process, started again RESTART_S after it exits unless it was stopped on purpose (`down`)."""

    RESTART_S = 1.0

    def __init__(self, name: str, argv: list[str], env: Mapping[str, str], log_dir: Path,
                 ready: Callable[[], None] | None = None) -> None:
        self.name, self.argv, self.env, self.ready = name, argv, dict(env), ready
        self.log = log_dir / f"{name}.log"
        self.exits: list[int] = []  # exit codes of every time it ended without being asked to
        self.proc: subprocess.Popen[bytes] | None = None
        self._down = True
        self._lock = threading.Lock()
        self._watch = threading.Thread(target=self._supervise, name=f"supervise-{name}", daemon=True)
        self._closed = False

    def start(self) -> Service:
        with self._lock:
            self._spawn()
            self._down = False
        if not self._watch.is_alive():
            self._watch.start()
        if self.ready:
            self.ready()
        return self

    def _spawn(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def _supervise(self) -> None:
        while not self._closed:
            time.sleep(0.1)
            with self._lock:
                proc = self.proc
                if self._down or proc is None or proc.poll() is None:
                    continue
                self.exits.append(proc.returncode)
            time.sleep(self.RESTART_S)
            with self._lock:
                if not self._down and not self._closed and self.proc is proc:
                    self._spawn()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """A crash: the supervisor brings it back (its exit is counted)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, limit_s: float = 20.0) -> None:
        """Down on purpose, until `start`."""
        with self._lock:
            self._down = True
            proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=limit_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def close(self) -> None:
        self.stop()
        self._closed = True

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def last_task_line(self) -> str:
        """The worker's newest 'Task firstfault.…' line (received / succeeded / retry …)."""
        try:
            with self.log.open("rb") as f:
                f.seek(max(0, self.log.stat().st_size - 8192))
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        tasks = [ln for ln in text.splitlines() if "Task firstfault." in ln]
        return tasks[-1] if tasks else ""


class PgProxy(TcpProxy):
    """TCP between the pipeline and PostgreSQL. `cut()` resets every connection and refuses new ones (accepted and
    closed at once) until `restore()`: what a PostgreSQL restart or a network partition looks like to a client."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.cut_now = threading.Event()
        super().__init__(upstream, "pg-proxy")

    def admit(self) -> bool:
        return not self.cut_now.is_set()

    def pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        try:
            super().pump(src, dst, from_client)
        finally:
            self.drop(src, dst)

    def cut(self) -> None:
        self.cut_now.set()
        self.drop_all()

    def restore(self) -> None:
        self.cut_now.clear()

    def close(self) -> None:
        self.cut_now.set()
        super().close()


def celery(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "workers.app", *args]
