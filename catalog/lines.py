"""Counting a buffer's newlines: the scanner numbers every line of its input, matched or not.

The C line loop's vectorised count where it is enabled (catalog/native.py: it reads 1 GB in a fraction of the
time CPython's byte-at-a-time bytes.count takes), bytes.count elsewhere; the two agree (tests/unit/test_libhs.py).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from catalog.native import linescan

Counter = Callable[..., int]  # (buffer, start=0, end=len(buffer)) -> newlines in buffer[start:end]


def python_count(buffer: bytes, start: int = 0, end: int | None = None) -> int:
    return buffer.count(b"\n", start, len(buffer) if end is None else end)


def newline_counter(module: ModuleType | None) -> Counter:
    """The count for work starting now, given what native.linescan() said for it: C, else python_count."""
    return python_count if module is None else module.count_newlines


def count_newlines(buffer: bytes, start: int = 0, end: int | None = None) -> int:
    """Newlines in buffer[start:end], by the count the switch selects now (a loop takes newline_counter's once)."""
    return newline_counter(linescan())(buffer, start, len(buffer) if end is None else end)
