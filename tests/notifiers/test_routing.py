"""Routing: the right subscriptions and targets, and the outcome for each (pure, time as an argument)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest

from notifiers.routing import Route, quiet_hours_end, route
from schemas.diagnosis import CollateralGroup
from schemas.subscription import Match, QuietHours, Subscription, Target
from tests.notifiers.conftest import ROUTING_KEY, make_incident

NOW = datetime(2026, 12, 1, 14, 0, tzinfo=UTC)
ONCALL = Target(kind="slack", address="#ml-oncall")
PAGER = Target(kind="pagerduty", address=ROUTING_KEY)
HOOK = Target(kind="webhook", address="https://hooks.example.org/ff")


def sub(id: str, match: dict[str, Any] | None = None, targets: list[Target] | None = None, **kw: Any) -> Subscription:
    return Subscription(id=id, team=kw.pop("team", "infra"), match=Match(**(match or {})),
                        targets=targets or [ONCALL], **kw)


def outcomes(routes: list[Route]) -> list[tuple[str, str, str]]:
    return [(r.subscription_id, r.target.kind, r.outcome) for r in routes]


MATCH_CASES = [
    ("signature wildcard", {"signatures": ["host.*"]}, True),
    ("other family", {"signatures": ["nccl.*", "xid.*"]}, False),
    ("tag", {"tags": ["oom"]}, True),
    ("category", {"categories": ["memory"]}, True),
    ("cluster wildcard", {"clusters": ["h100-*"]}, True),
    ("initiating host", {"hosts": ["node004"]}, True),
    ("a collateral host is not the cause", {"hosts": ["node001"]}, False),
    ("severity", {"severities": ["critical"]}, False),
    ("labels all match", {"labels": {"project": "llama", "env": "prod"}}, True),
    ("one label differs", {"labels": {"project": "llama", "env": "staging"}}, False),
    ("where narrows what", {"tags": ["oom"], "clusters": ["a100-*"]}, False),
    ("OR inside a criterion", {"signatures": ["nccl.*", "host.oom_*"]}, True),
    ("what is a union: tag nccl or signature host.*", {"tags": ["nccl"], "signatures": ["host.*"]}, True),
    ("what is a union, none hits", {"tags": ["nccl"], "signatures": ["xid.*"]}, False),
    ("where alone: a whole cluster", {"clusters": ["h100-east"], "severities": ["error", "critical"]}, True),
]


@pytest.mark.parametrize(("name", "match", "expected"), MATCH_CASES, ids=[c[0] for c in MATCH_CASES])
def test_a_subscription_matches_on_the_root_cause(name: str, match: dict[str, Any], expected: bool) -> None:
    routes = route(make_incident(), [sub("s1", match)], NOW)
    assert [r.outcome for r in routes if r.subscription_id == "s1"] == (["send"] if expected else [])


def test_a_subscription_without_criteria_gets_its_own_teams_jobs_only() -> None:
    subs = [sub("mine", team="pretrain"), sub("theirs", team="inference")]
    assert outcomes(route(make_incident(team="pretrain"), subs, NOW)) == [("mine", "slack", "send")]


def test_the_fallback_gets_only_what_nobody_else_matched() -> None:
    triage = sub("zz-triage", targets=[Target(kind="slack", address="#firstfault-triage")], fallback=True)
    nccl = sub("nccl", {"signatures": ["nccl.*"]})
    assert outcomes(route(make_incident(), [nccl, triage], NOW)) == [("zz-triage", "slack", "send")]
    hosts = sub("host", {"tags": ["host"]})
    assert outcomes(route(make_incident(), [hosts, triage], NOW)) == [("host", "slack", "send")]


def test_a_collateral_signature_never_routes_and_says_why() -> None:
    watchdog = sub("watchdog", {"signatures": ["pytorch.c10d.*"]}, [ONCALL, PAGER])
    routes = route(make_incident(), [watchdog], NOW)
    assert outcomes(routes) == [("watchdog", "slack", "suppressed_collateral"),
                                ("watchdog", "pagerduty", "suppressed_collateral")]
    assert "root cause is host.oom_killer" in routes[0].reason


def test_when_the_root_cause_is_itself_collateral_slack_posts_but_nobody_is_paged() -> None:
    incident = make_incident()
    subs = [sub("all", {"categories": ["memory"]}, [ONCALL, PAGER, HOOK])]
    routes = route(incident, subs, NOW, collateral_signatures={"host.oom_killer"})
    assert outcomes(routes) == [("all", "slack", "send"), ("all", "pagerduty", "suppressed_collateral"),
                                ("all", "webhook", "send")]


def test_two_subscriptions_on_one_channel_make_one_post() -> None:
    subs = [sub("a", {"tags": ["oom"]}, [ONCALL, PAGER]), sub("b", {"categories": ["memory"]}, [ONCALL])]
    assert outcomes(route(make_incident(), subs, NOW)) == [("a", "slack", "send"), ("a", "pagerduty", "send"),
                                                            ("b", "slack", "deduplicated")]


def test_a_muted_subscription_is_recorded_not_sent_and_unmutes_by_itself() -> None:
    muted = sub("m", {"tags": ["oom"]}, [ONCALL, PAGER], mute_until=NOW + timedelta(hours=2))
    assert [r.outcome for r in route(make_incident(), [muted], NOW)] == ["muted", "muted"]
    assert [r.outcome for r in route(make_incident(), [muted], NOW + timedelta(hours=3))] == ["send", "send"]


def test_a_muted_twin_does_not_silence_a_channel_another_subscription_posts_to() -> None:
    subs = [sub("a", {"tags": ["oom"]}, mute_until=NOW + timedelta(hours=1)), sub("b", {"tags": ["oom"]})]
    assert outcomes(route(make_incident(), subs, NOW)) == [("a", "slack", "muted"), ("b", "slack", "send")]


NIGHT = QuietHours(start=time(22, 0), end=time(7, 0), timezone="Europe/Paris")


def test_quiet_hours_hold_the_page_until_morning_but_slack_posts_now() -> None:
    at_night = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)  # 00:30 in Paris
    routes = route(make_incident(), [sub("q", {"tags": ["oom"]}, [ONCALL, PAGER], quiet_hours=NIGHT)], at_night)
    assert [r.outcome for r in routes] == ["send", "held_quiet_hours"]
    assert routes[1].not_before == datetime(2026, 12, 2, 6, 0, tzinfo=UTC)  # 07:00 in Paris


def test_a_critical_incident_pages_through_quiet_hours() -> None:
    at_night = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)
    routes = route(make_incident(severity="critical"), [sub("q", {"tags": ["oom"]}, [PAGER], quiet_hours=NIGHT)],
                   at_night)
    assert [r.outcome for r in routes] == ["send"]


@pytest.mark.parametrize(("local", "end"), [
    ("2026-12-01T21:59", None), ("2026-12-01T22:00", "2026-12-02T07:00"), ("2026-12-02T06:59", "2026-12-02T07:00"),
    ("2026-12-02T07:00", None), ("2026-12-02T12:00", None)])
def test_quiet_hours_wrap_midnight_in_the_subscriptions_time_zone(local: str, end: str | None) -> None:
    paris = NIGHT.timezone
    from zoneinfo import ZoneInfo

    now = datetime.fromisoformat(local).replace(tzinfo=ZoneInfo(paris))
    got = quiet_hours_end(NIGHT, now)
    assert (got.astimezone(ZoneInfo(paris)).replace(tzinfo=None).isoformat(timespec="minutes") if got else None) \
        == end


def test_no_failure_found_goes_nowhere() -> None:
    incident = make_incident()
    incident.diagnosis.verdict = "no_failure_found"
    assert route(incident, [sub("any", {"tags": ["oom"]}), sub("fb", fallback=True)], NOW) == []


def test_one_route_per_destination_however_many_ranks_failed() -> None:
    incident = make_incident()
    incident.diagnosis.collateral.append(CollateralGroup(signature="nccl.bootstrap.connection_reset",
                                                         ranks=list(range(512)), count=512))
    routes = route(incident, [sub("a", {"tags": ["oom"]}, [ONCALL, PAGER])], NOW)
    assert len(routes) == 2


def test_a_signature_muted_on_the_cluster_mutes_every_target_until_the_mute_ends() -> None:
    """Slack's "Mute signature on cluster" (store/actions.py): posts, pages and webhooks alike, and quiet hours'
    held pages too; suppressed collateral stays what it was; once the mute has ended, everything sends."""
    incident = make_incident()
    subs = [sub("a", {"tags": ["oom"]}, [ONCALL, PAGER, HOOK]),
            sub("quiet", {"tags": ["oom"]}, [Target(kind="pagerduty", address="Q" * 32)],
                quiet_hours=QuietHours(start=time(13), end=time(15), timezone="UTC")),
            sub("watchdog", {"signatures": ["pytorch.c10d.watchdog_timeout"]})]
    muted = route(incident, subs, NOW, signature_muted_until=NOW + timedelta(hours=4))
    assert outcomes(muted) == [("a", "slack", "muted"), ("a", "pagerduty", "muted"), ("a", "webhook", "muted"),
                               ("quiet", "pagerduty", "muted"), ("watchdog", "slack", "suppressed_collateral")]
    assert "host.oom_killer muted on h100-east until 2026-12-01T18:00" in muted[0].reason
    ended = route(incident, subs, NOW, signature_muted_until=NOW)
    assert [o for _, _, o in outcomes(ended)] == ["send", "send", "send", "held_quiet_hours", "suppressed_collateral"]
