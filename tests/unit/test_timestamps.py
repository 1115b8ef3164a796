"""Timestamps as real logs print them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from correlator.timestamps import parse_timestamp


@pytest.mark.parametrize(
    ("line", "expected", "clock"),
    [
        ("2026-11-29T10:02:03.123Z rank 3 failed", datetime(2026, 11, 29, 10, 2, 3, 123000, tzinfo=UTC), "wall"),
        ("2026-11-29T12:02:03+02:00 x", datetime(2026, 11, 29, 10, 2, 3, tzinfo=UTC), "wall"),
        ("[2026-11-29 10:02:03,123] [INFO] step", datetime(2026, 11, 29, 10, 2, 3, 123000, tzinfo=UTC), "wall"),
        ("E1129 10:02:03.123456 12 file.cc:1] boom", datetime(2026, 11, 29, 10, 2, 3, 123456, tzinfo=UTC), "wall"),
        ("[rank3]:[E1129 10:02:03.123456789 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog",
         datetime(2026, 11, 29, 10, 2, 3, 123456, tzinfo=UTC), "wall"),
        ("Nov 29 10:02:03 node017 kernel: NVRM: Xid", datetime(2026, 11, 29, 10, 2, 3, tzinfo=UTC), "wall"),
        ("[Sun Aug 23 17:58:44 2026] NVRM: Xid (PCI:0000:3b:00): 79",
         datetime(2026, 8, 23, 17, 58, 44, tzinfo=UTC), "wall"),
        ("ERROR 04-15 00:31:11 worker_base.py:574] RuntimeError", datetime(2026, 4, 15, 0, 31, 11, tzinfo=UTC),
         "wall"),
        ("[2026-07-05T15:55:43.982] error: Detected 1 oom_kill event",
         datetime(2026, 7, 5, 15, 55, 43, 982000, tzinfo=UTC), "wall"),
    ],
)
def test_wall_clock_formats(line: str, expected: datetime, clock: str) -> None:
    stamp = parse_timestamp(line, 2026)
    assert stamp is not None
    assert stamp.time == expected
    assert stamp.clock == clock


def test_dmesg_seconds_since_boot_is_not_a_wall_clock() -> None:
    stamp = parse_timestamp("[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, pid=1", 2026)
    assert stamp is not None
    assert stamp.clock == "boot"
    assert stamp.time.timestamp() == pytest.approx(12345.678901)


def test_the_year_comes_from_the_argument_for_formats_without_one() -> None:
    stamp = parse_timestamp("W0101 00:00:01.000001 1 a.cc:1] x", 2031)
    assert stamp is not None
    assert stamp.time.year == 2031


@pytest.mark.parametrize("line", ["step 1200 loss 2.31", "", "E9999 99:99:99.1 impossible date", "\x00\xff junk"])
def test_lines_without_a_clock_give_none(line: str) -> None:
    assert parse_timestamp(line, 2026) is None


def test_a_remembered_glog_stamp_is_read_again_for_another_year_and_an_impossible_one_stays_none() -> None:
    from correlator import timestamps

    timestamps.glog_stamps.clear()
    line = "[rank3]:[E0229 10:02:03.123456789 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught"
    leap, plain = parse_timestamp(line, 2028), parse_timestamp(line, 2027)  # 29 February exists in 2028 only
    assert leap is not None and leap.time.year == 2028 and plain is None
    assert parse_timestamp(line, 2028) == leap and parse_timestamp(line, 2027) is None  # remembered: the same
    other = "W1129 10:02:03.5 12 x.cc:3] and [E1129 10:02:04.000001 y.cc:9]"  # the first stamp wins, as before
    timestamps.glog_stamps.clear()
    fresh = parse_timestamp(other, 2026)
    assert fresh is not None and fresh.time == datetime(2026, 11, 29, 10, 2, 3, 500000, tzinfo=UTC)
    assert parse_timestamp(other, 2026) is fresh  # read again from memory: the same stamp, the same datetime
