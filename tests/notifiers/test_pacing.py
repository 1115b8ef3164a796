"""Per-channel pacing: send now, or retry at T; never a sleep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from notifiers.pacing import Pacer

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_burst_goes_out_then_one_per_second() -> None:
    pacer = Pacer(rate=1.0, burst=3)
    assert [pacer.take("C1", T).send for _ in range(3)] == [True, True, True]
    held = pacer.take("C1", T)
    assert not held.send and held.retry_at == T + timedelta(seconds=1)
    assert pacer.take("C1", T + timedelta(seconds=1)).send
    assert not pacer.take("C1", T + timedelta(seconds=1.5)).send


def test_channels_are_paced_independently() -> None:
    pacer = Pacer(rate=1.0, burst=1)
    assert pacer.take("C1", T).send and pacer.take("C2", T).send
    assert not pacer.take("C1", T).send


def test_a_retry_after_from_slack_holds_the_channel_until_then() -> None:
    pacer = Pacer(rate=1.0, burst=3)
    pacer.hold("C1", T + timedelta(seconds=30))
    held = pacer.take("C1", T + timedelta(seconds=10))
    assert not held.send and held.retry_at == T + timedelta(seconds=30)
    assert pacer.take("C1", T + timedelta(seconds=30)).send


def test_tokens_never_exceed_the_burst_after_a_quiet_hour() -> None:
    pacer = Pacer(rate=1.0, burst=2)
    pacer.take("C1", T)
    later = T + timedelta(hours=1)
    assert [pacer.take("C1", later).send for _ in range(3)] == [True, True, False]
