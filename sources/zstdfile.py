"""Reading a .zst log whole or not at all. python-zstandard's stream reader returns what it decoded and then end of
data when a file stops inside a frame (an interrupted copy, a log rotated while it was compressed): a diagnosis
would go on without the end of the log, which is where a failure is. So at its end the file's frames are walked,
headers and block headers only (RFC 8878), and a frame that does not end where the file does is an error."""

from __future__ import annotations

import os
from typing import Any, BinaryIO

_FRAME_MAGIC = 0xFD2FB528
_SKIPPABLE_MAGIC = 0x184D2A50  # the low four bits are free
_DICT_ID_BYTES = (0, 1, 2, 4)
_CONTENT_SIZE_BYTES = (0, 2, 4, 8)  # flag 0 is one byte in a single-segment frame


class ZstdFile:
    """A .zst file's decompressed bytes through ``read(n)``, every frame of it (at most n bytes a read: memory
    stays bounded whatever the ratio); the read that finds its end raises EOFError if the last frame is cut."""

    def __init__(self, path: str, zstandard: Any) -> None:
        self._raw = open(path, "rb")  # noqa: SIM115 -- closed by close()
        self._reader = zstandard.ZstdDecompressor().stream_reader(self._raw, read_across_frames=True,
                                                                  closefd=False)
        self._walked = False

    def read(self, size: int) -> bytes:
        block: bytes = self._reader.read(size)
        if not block and not self._walked:  # the reader is done with the file: walk it from its start
            self._walked = True
            self._raw.seek(0)
            if (problem := unended_frame(self._raw)) is not None:
                raise EOFError(problem)
        return block

    def close(self) -> None:
        self._reader.close()
        self._raw.close()


def unended_frame(fh: BinaryIO) -> str | None:
    """Why the zstd data in ``fh`` does not end at a frame's end, or None where it does (no data at all included)."""
    start = fh.tell()
    end = fh.seek(0, os.SEEK_END)
    fh.seek(start)
    while True:
        magic = fh.read(4)
        if not magic:
            return None
        if len(magic) < 4:
            return "zstd data ends inside a frame header (truncated?)"
        number = int.from_bytes(magic, "little")
        if number & ~0xF == _SKIPPABLE_MAGIC:
            size = fh.read(4)
            if len(size) < 4 or fh.seek(int.from_bytes(size, "little"), os.SEEK_CUR) > end:
                return "zstd data ends inside a skippable frame (truncated?)"
            continue
        if number != _FRAME_MAGIC:
            return "zstd data is followed by bytes that are not a zstd frame"
        if (problem := _skip_frame(fh, end)) is not None:
            return problem


def frame_table(fh: BinaryIO) -> list[tuple[int, int | None]] | None:
    """Each zstd frame's offset in ``fh`` and the size of what it decompresses to, where its header says (None
    where not: a stream compressed from a pipe); skippable frames left out. None for data that is not whole
    frames. Headers and block headers are read, nothing is decompressed."""
    end = fh.seek(0, os.SEEK_END)
    fh.seek(0)
    table: list[tuple[int, int | None]] = []
    while (at := fh.tell()) < end:
        magic = int.from_bytes(fh.read(4), "little")
        if magic & ~0xF == _SKIPPABLE_MAGIC:
            size = fh.read(4)
            if len(size) < 4 or fh.seek(int.from_bytes(size, "little"), os.SEEK_CUR) > end:
                return None
            continue
        found: list[int | None] = []
        if magic != _FRAME_MAGIC or _skip_frame(fh, end, found) is not None:
            return None
        table.append((at, found[0]))
    return table


def _skip_frame(fh: BinaryIO, end: int, content: list[int | None] | None = None) -> str | None:
    """Past one frame whose magic number was read: its header, its blocks, its checksum. The size its header
    gives what it decompresses to (None if none) is appended to ``content``."""
    cut = "zstd data ends inside a frame (truncated?)"
    descriptor = fh.read(1)
    if not descriptor:
        return cut
    flags = descriptor[0]
    single_segment = flags >> 5 & 1
    content_size = _CONTENT_SIZE_BYTES[flags >> 6] or single_segment
    header = (1 - single_segment) + _DICT_ID_BYTES[flags & 3]
    if fh.seek(header, os.SEEK_CUR) > end:
        return cut
    stored = fh.read(content_size)
    if len(stored) < content_size:
        return cut
    if content is not None:  # RFC 8878 3.1.1.1.4: a two-byte size is stored less 256
        content.append(int.from_bytes(stored, "little") + (256 if content_size == 2 else 0) if stored else None)
    while True:
        head = fh.read(3)
        if len(head) < 3:
            return cut
        value = int.from_bytes(head, "little")
        kind, size = value >> 1 & 3, value >> 3
        if kind == 3:
            return "zstd data holds a block of the reserved type (corrupt)"
        if fh.seek(1 if kind == 1 else size, os.SEEK_CUR) > end:  # an RLE block stores one byte
            return cut
        if value & 1:  # the frame's last block
            break
    if flags >> 2 & 1 and fh.seek(4, os.SEEK_CUR) > end:  # the content checksum
        return cut
    return None
