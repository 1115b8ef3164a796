"""A directory of serialized scanner state, keyed by a hash of what it was built from, so start-up skips compiling.

Entries are written atomically (a temporary file, then a rename) and carry a SHA-256 of their payload, so a torn,
truncated or corrupted file reads as missing. Every failure here (a directory that cannot be created or written,
a full disk, a corrupt entry) is silent: the caller compiles instead. Nothing in the cache is needed for
correctness, only for speed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

MAGIC = b"firstfault-cache-1\n"
_DIGEST = hashlib.sha256().digest_size


def cache_key(*parts: str | bytes) -> str:
    """A stable key for ``parts`` (each length-prefixed, so ``("ab", "c")`` and ``("a", "bc")`` differ)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


class BlobCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.bin"

    def get(self, key: str) -> bytes | None:
        try:
            blob = self._path(key).read_bytes()
        except OSError:
            return None
        digest, payload = blob[len(MAGIC) : len(MAGIC) + _DIGEST], blob[len(MAGIC) + _DIGEST :]
        if not blob.startswith(MAGIC) or hashlib.sha256(payload).digest() != digest:
            return None
        return payload

    def put(self, key: str, payload: bytes) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{key}.", suffix=".tmp")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, self._path(key))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

