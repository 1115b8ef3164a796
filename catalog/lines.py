"""Counting a buffer's newlines: the scanner numbers every line of its input, matched or not.

The C line loop's vectorised count where catalog._linescan was built (it reads 1 GB in a fraction of the time
CPython's byte-at-a-time bytes.count takes), bytes.count elsewhere; the two agree (tests/unit/test_libhs.py).
"""

from __future__ import annotations

from collections.abc import Callable


def _python_count(buffer: bytes, start: int = 0, end: int | None = None) -> int:
    return buffer.count(b"\n", start, len(buffer) if end is None else end)


def _count() -> Callable[..., int]:
    try:
        from catalog._linescan import count_newlines  # type: ignore[import-not-found]
    except ImportError:
        return _python_count
    return count_newlines  # type: ignore[no-any-return]


count_newlines: Callable[..., int] = _count()  # (buffer, start=0, end=len(buffer)) -> newlines in buffer[start:end]
