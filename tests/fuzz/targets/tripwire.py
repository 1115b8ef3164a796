"""Not a surface: the target tests/fuzz/test_atheris.py runs to see that a failing check is reported with the
input that failed it (libFuzzer's crash file) and the command that replays it."""

from __future__ import annotations


def check(data: bytes) -> None:
    if data.startswith(b"TRIP"):
        raise RuntimeError("tripped")
