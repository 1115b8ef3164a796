"""A capture of up to 12 decimal digits, a sign allowed, becomes an int in a finding's fields; anything else stays
text, and a group that took no part is left out. Where catalog._linescan was built the matcher uses its C
version, which must equal the Python one on every kind of group value."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from catalog.matcher import _captures_now, _python_captures
from catalog.native import switched


@pytest.mark.parametrize(("text", "fields"), [
    ("rank 25 bus 2b000", {"rank": 25, "bus": "2b000"}),
    ("rank -3 bus 00017", {"rank": -3, "bus": 17}),
    ("rank 123456789012 bus 1234567890123", {"rank": 123456789012, "bus": "1234567890123"}),  # 13 digits: text
    ("rank -123456789012 bus -", {"rank": -123456789012, "bus": "-"}),
    ("rank ٣ bus 1-2", {"rank": 3, "bus": "1-2"}),  # a decimal digit of another script, as int() reads it
    ("rank 7", {"rank": 7}),  # the bus group took no part
])
def test_decimal_captures_become_ints(text: str, fields: dict[str, object]) -> None:
    m = re.search(r"rank (?P<rank>-?\w+)(?: bus (?P<bus>\S+))?", text)
    assert m is not None
    assert _captures_now()(m) == fields
    assert _python_captures(m) == fields


def _linescan() -> Any:
    return pytest.importorskip("catalog._linescan", reason="the C line loop is built only where libhs is installed")


# Characters that decide a conversion: ASCII and other scripts' decimal digits (int() reads them), digits that
# are not decimal (superscripts, circled), the sign, and ordinary text.
ALPHABET = "0123456789" * 3 + "٠٣٩０５９߀" + "²³①" + "--+ .x_é" + "\u00a0"


def _value(rng: random.Random) -> str:
    length = rng.choice([0, 1, 2, 5, 11, 12, 13, 14, 20])
    text = "".join(rng.choice(ALPHABET) for _ in range(length))
    if rng.random() < 0.3:  # a pure number, signed or not, at the edges of the 12-digit rule
        text = ("-" if rng.random() < 0.4 else "") + "".join(rng.choice("0123456789٣") for _ in range(length))
    return text


@pytest.mark.parametrize("seed", range(40))
def test_the_c_captures_equals_the_python_one(seed: int) -> None:
    rng = random.Random(seed)
    nones = ints = 0
    for _ in range(200):
        values = [_value(rng) for _ in range(rng.randint(1, 6))]
        absent = [rng.random() < 0.25 for _ in values]
        # One optional group per value, separated by a character no value holds: absent ones match nothing.
        pattern = "".join(f"(?:(?P<g{i}>[^|]*)\\|)?" if absent[i] else f"(?P<g{i}>[^|]*)\\|"
                          for i in range(len(values)))
        text = "".join("" if absent[i] else value + "|" for i, value in enumerate(values))
        m = re.fullmatch(pattern, text)
        assert m is not None
        want = _python_captures(m)
        got = _linescan().captures(m)
        assert got == want and list(got) == list(want)
        assert [type(v) for v in got.values()] == [type(v) for v in want.values()]
        assert got is not m.groupdict()
        nones += None in m.groupdict().values()
        ints += sum(type(v) is int for v in got.values())
    assert nones > 20 and ints > 50  # both paths taken: groups that did not take part, and conversions


def test_the_matcher_uses_the_c_captures_where_it_is_switched_on() -> None:
    _captures = _captures_now()
    assert _captures is _linescan().captures
    with switched(False):
        assert _captures_now() is _python_captures
    m = re.search(r"rank (?P<rank>\d+)(?: pid (?P<pid>\d+))? of (?P<n>-?\d+) (?P<big>\d+)",
                  "rank 7 of -1 1234567890123")
    assert m is not None and _captures(m) == {"rank": 7, "n": -1, "big": "1234567890123"}
