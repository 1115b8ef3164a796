"""Fuzz target: a byte blob read as a log, the way `firstfault diagnose` reads a file: written to disk as a
plain, .gz or .zst file, read in chunks by sources/files.py (the decompressing readers), each chunk fed to the
correlator's SourceScanner with the bundled catalog's matcher.

The first byte chooses how the rest is stored (plain; gzip or zstd of it, which must read back whole; the bytes
themselves named .gz or .zst, mostly corrupt) and the chunk size (1 to 128 bytes: lines cut anywhere). The
answer is a scan, or UsageError with a reason for a file that cannot be read; never another exception.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from functools import cache
from pathlib import Path

import zstandard

from catalog.matcher import Matcher
from correlator.reading import SourceResult, SourceScanner
from correlator.speakers import Who
from scan.engine import default_matcher
from schemas.errors import UsageError
from sources.files import Source, chunks

# (suffix, how the body is stored)
LAYOUTS = ((".log", None), (".gz", gzip.compress), (".zst", zstandard.ZstdCompressor().compress),
           (".gz", None), (".zst", None))


@cache
def _matcher() -> Matcher:
    return default_matcher()


@cache
def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="ff-fuzz-logs-"))


def prepare() -> None:
    _matcher()


def scan(body: bytes, name: str, chunk: int) -> SourceResult:
    """The scan of the file `name` holding `body`, read `chunk` bytes at a time."""
    path = _folder() / name
    path.write_bytes(body)
    try:
        scanner = SourceScanner(_matcher(), "node017/rank3" + path.suffix, Who(), 2026)
        for block in chunks(Source(path.name, path), size=chunk):
            scanner.feed(block)
        return scanner.finish()
    finally:
        os.unlink(path)


def check(data: bytes) -> None:
    head, body = (data[0], data[1:]) if data else (0, b"")
    suffix, pack = LAYOUTS[head % len(LAYOUTS)]
    chunk = 1 + (head >> 1) % 128
    stored = pack(body) if pack is not None else body
    try:
        result = scan(stored, "rank3" + suffix, chunk)
    except UsageError as exc:
        assert pack is None and suffix != ".log", f"a {suffix} file written whole was refused: {exc}"
        assert str(exc), "UsageError without a reason"
        return
    assert all(f.line_no >= 1 for f in result.findings), "a finding before line 1"
    if pack is not None or suffix == ".log":
        assert result.bytes == len(body), f"read {result.bytes:,} of {len(body):,} bytes"

