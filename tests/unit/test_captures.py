"""A capture of up to 12 decimal digits, a sign allowed, becomes an int in a finding's fields; anything else stays
text, and a group that took no part is left out."""

from __future__ import annotations

import re

import pytest

from catalog.matcher import _captures


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
    assert _captures(m) == fields
