"""`firstfault ship --follow FILE`: stream a log that is still being written, as `tail -F` follows it.

A rotated file (the path now names another inode) is read to its end before the new one is opened from its
start; a truncated one (shorter than what was read) is read again from its start. Complete lines go out every
`flush_s` or once `batch` bytes wait; the end (eof, with any last partial line) once `ended()` says so (the
job's event is no longer `started`, or the launcher's process is gone) or `timeout_s` has passed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import httpx

from ingest.chunking import Note, StreamKey, envelopes
from ingest.ship import Transport
from schemas.wire import Compression

READ = 1 << 20


@dataclass
class Followed:
    shards: int = 0
    bytes: int = 0
    rotations: int = 0
    truncations: int = 0
    why: str = ""


class job_ended:  # used as a function: follow(..., job_ended(url, job, token), ...)
    """True once GET /v1/jobs/{id} answers a state other than `started`; unknown or unreachable is not ended."""

    def __init__(self, url: str, job_id: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=5.0)
        self._path = f"/v1/jobs/{job_id}"

    def __call__(self) -> bool:
        try:
            response = self._client.get(self._path)
            return response.status_code == 200 and response.json().get("state") != "started"
        except (httpx.HTTPError, ValueError):
            return False

    def close(self) -> None:
        self._client.close()


def process_gone(pid: int) -> Callable[[], bool]:
    def check() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, someone else's
            return False
        return False
    return check


class _Tail:
    def __init__(self, path: Path, followed: Followed, note: Note) -> None:
        self.path, self.followed, self.note = path, followed, note
        self.fh: BinaryIO | None = None
        self.ino = -1
        self.pos = 0

    def _open(self) -> None:
        try:
            self.fh = self.path.open("rb")
        except OSError:
            self.fh = None
            return
        self.ino, self.pos = os.fstat(self.fh.fileno()).st_ino, 0

    def read(self) -> bytes:
        if self.fh is None:
            self._open()
            if self.fh is None:
                return b""
        data = self.fh.read(READ)
        if data:
            self.pos += len(data)
            return data
        try:
            now = os.stat(self.path)
        except OSError:  # moved away and not yet recreated: keep the old file, it may still grow
            return b""
        if now.st_ino != self.ino:  # rotated: the old file is read to its end (above), then the new one
            self.fh.close()
            self.followed.rotations += 1
            self.note(f"{self.path}: rotated; following the new file from its start")
            self._open()
            return self.read() if self.fh is not None else b""
        if now.st_size < self.pos:  # truncated in place (copytruncate, `> file`)
            self.followed.truncations += 1
            self.note(f"{self.path}: truncated; reading it again from its start")
            self.fh.seek(0)
            self.pos = 0
            return self.read()
        return b""

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def follow(transport: Transport, job_id: str, path: Path, key: StreamKey, ended: Callable[[], bool],
           timeout_s: float, note: Note, compression: Compression = "zstd", poll_s: float = 0.25,
           flush_s: float = 2.0, check_s: float = 5.0, batch: int = 1 << 20) -> Followed:
    followed = Followed()
    tail = _Tail(path, followed, note)
    seq = 0
    pending = b""
    deadline = time.monotonic() + timeout_s
    last_flush = last_check = time.monotonic()

    def send(data: bytes, eof: bool) -> None:
        nonlocal seq
        shards = list(envelopes(job_id, key, path.name, data, compression, note)) if data else []
        if eof and not shards:
            shards = list(envelopes(job_id, key, path.name, b"", "none", note))
        for i, shard in enumerate(shards):
            transport.send_shard(shard.model_copy(update={"seq": seq, "eof": eof and i == len(shards) - 1}))
            seq += 1
            followed.shards += 1
        followed.bytes += len(data)

    try:
        while True:
            data = tail.read()
            pending += data
            now = time.monotonic()
            if now - last_check >= check_s:
                last_check = now
                if ended():
                    followed.why = "the job ended"
            if not followed.why and now >= deadline:
                followed.why = f"--timeout {timeout_s:g} s"
            if followed.why:
                while chunk := tail.read():  # what the job wrote last
                    pending += chunk
                send(pending, eof=True)
                return followed
            cut = pending.rfind(b"\n") + 1
            if not cut and len(pending) >= 4 * batch:  # no newline in 4 MiB: a line is cut, memory stays bounded
                cut = len(pending)
            if cut and (cut >= batch or now - last_flush >= flush_s):
                send(pending[:cut], eof=False)
                pending, last_flush = pending[cut:], now
            if not data:
                time.sleep(poll_s)
    finally:
        tail.close()
