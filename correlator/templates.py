"""Error lines reduced to templates (numbers, addresses and paths masked), and how grave each one reads.

Shared by the scanner, which keeps one record per distinct template a speaker prints, and by the differential
view, which weighs those templates.
"""

from __future__ import annotations

import re

_MASKS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?:<\d+>|:\d+)?"), "<ip>"),
    (re.compile(r"(?:/[\w.+-]+)+"), "<path>"),
    (re.compile(r"-?\d+(?:\.\d+)?"), "<n>"),
]
_GRAVE = re.compile(r"(?i)\b(?:fatal|abort(?:ed|ing)?|killed|exception|traceback|core dumped|segmentation)\b")
_MILD = re.compile(r"(?i)\b(?:warn(?:ing)?|skipp(?:ed|ing)|retry(?:ing)?|will retry|ignored?)\b|^\[?W\d{4} ")
_PREFIX = re.compile(r"^(?:\[[^\]]{0,80}\]:?\s*|\S+:\d+:\d+ \[\d+\] |[IWEF]\d{4} [\d:.]+ \d+ \S+\] )+")


def template(text: str) -> str:
    body = _PREFIX.sub("", text.strip())
    for rx, mask in _MASKS:
        body = rx.sub(mask, body)
    return body[:200]


# What each pattern needs in the case-folded line before it can match at all, tested as substrings: Python's `re`
# tries a caseless alternation at every position (7 µs a line), and most error lines hold none of these words.
_GRAVE_WORDS = ("fatal", "abort", "killed", "exception", "traceback", "core dumped", "segmentation")
_MILD_WORDS = ("warn", "skipp", "retry", "ignor")


def gravity(text: str) -> int:
    """How much an error line reads like the end of a process: 'fatal: aborting' over 'error ..., skipped'."""
    folded = text.casefold()
    has = folded.__contains__
    grave = any(map(has, _GRAVE_WORDS)) and _GRAVE.search(text) is not None
    mild = (any(map(has, _MILD_WORDS)) or folded[:1] in ("w", "[")) and _MILD.search(text) is not None
    return 2 + (2 if grave else 0) - (1 if mild else 0)


SHAPE_MEMO = 4096  # distinct digit layouts remembered
# The layout is made of the text's UTF-8 bytes: bytes.translate takes 0.2 us where str.translate took 2.3 (a
# 400-character watchdog line), and encoding maps ASCII digits and 0x runs one to one.
_ONES = bytes.maketrans(b"0123456789", b"1111111111")
_HEX = re.compile(rb"0x[0-9a-fA-F]+")  # template's <hex> mask, on bytes
_shapes: dict[bytes, tuple[str, int]] = {}


def _blank(run: re.Match[bytes]) -> bytes:
    return b"\0" * len(run[0])


def shape(text: str) -> tuple[str, int]:
    """(template(text), gravity(text)), remembered by the text's layout: every ASCII digit made a 1, and every
    `0x` run (what template masks as <hex>) made NULs of its length. Both read digits only as digits (\\d, \\w),
    never by value, and a hex run only through its length: no other pattern can begin or end inside one (each
    starts after a space, a bracket, a colon or a word boundary, and no word they look for holds a 0). So texts
    that differ only in those values share one. At 4,096 ranks, the 25,600 distinct error texts of a job have 27
    such layouts (each rank's number, pid, time stamp and frame addresses differ)."""
    raw = text.encode("utf-8", "surrogatepass")
    if b"0x" in raw:
        if b"\0" in raw:  # a NUL of its own would read as a masked run
            return template(text), gravity(text)
        raw = _HEX.sub(_blank, raw)
    key = raw.translate(_ONES)
    found = _shapes.get(key)
    if found is None:
        if len(_shapes) >= SHAPE_MEMO:
            _shapes.clear()
        found = _shapes[key] = (template(text), gravity(text))
    return found
