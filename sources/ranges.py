"""A log file's bytes read at any offset, for scanning it in pieces (scan/split.py): a plain file as it is, a zstd
file of several frames whose headers give their sizes through the frame holding the offset. A gzip file, or zstd
in one frame or from a pipe (no sizes), is one stream read from its start: it has no reader here."""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable
from typing import Any, Protocol

from sources.files import CHUNK
from sources.zstdfile import frame_table

ZSTD_SUFFIXES = (".zst", ".zstd")


class RangeReader(Protocol):
    def pread(self, size: int, offset: int) -> bytes: ...

    def close(self) -> None: ...


class PlainReader:
    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY)

    def pread(self, size: int, offset: int) -> bytes:
        return os.pread(self._fd, size, offset)

    def close(self) -> None:
        os.close(self._fd)


class FramesReader:
    """Decompressed bytes of a multi-frame zstd file at an offset: decompressing starts at the frame that holds it
    (what comes before the offset in that frame is decompressed and dropped), and reading on from where the last
    read ended decompresses only what it returns."""

    def __init__(self, path: str, frames: list[tuple[int, int]]) -> None:
        import zstandard

        self._decompressor = zstandard.ZstdDecompressor()
        self._raw = open(path, "rb")  # noqa: SIM115 -- closed by close()
        self._offsets = [offset for offset, _ in frames]  # in the file
        self._starts = [start for _, start in frames]  # in what it decompresses to
        self._reader: Any = None
        self._at = -1  # where the reader is, in what the file decompresses to

    def pread(self, size: int, offset: int) -> bytes:
        if offset != self._at:
            self._seek(offset)
        data: bytes = self._reader.read(size)
        self._at += len(data)
        return data

    def _seek(self, offset: int) -> None:
        frame = max(0, bisect_right(self._starts, offset) - 1)
        if self._reader is not None:
            self._reader.close()
        self._raw.seek(self._offsets[frame])
        self._reader = self._decompressor.stream_reader(self._raw, read_across_frames=True, closefd=False)
        self._at = self._starts[frame]
        while self._at < offset and (dropped := self._reader.read(min(CHUNK, offset - self._at))):
            self._at += len(dropped)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self._raw.close()


def range_reader(path: str) -> tuple[Callable[[], RangeReader], int] | None:
    """How to open ``path`` for reading at offsets, and the size of what it holds; None for a stream that is read
    from its start (gzip, zstd of one frame or without frame sizes) or a path that is no regular file."""
    if not os.path.isfile(path):
        return None
    suffix = os.path.splitext(path)[1]
    if suffix == ".gz":
        return None
    if suffix not in ZSTD_SUFFIXES:
        return (lambda: PlainReader(path)), os.path.getsize(path)
    with open(path, "rb") as fh:
        table = frame_table(fh)
    if table is None or len(table) < 2 or any(size is None for _, size in table):
        return None
    frames, start = [], 0
    for offset, size in table:
        frames.append((offset, start))
        start += size or 0
    return (lambda: FramesReader(path, frames)), start
