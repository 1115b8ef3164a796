"""`firstfault subscribe | unsubscribe | subscriptions | outcomes | deliver` as a user runs them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from firstfault.cli import main
from notifiers.outbox import on_saved
from store.incidents import Store
from tests.fakes.slack_api import FakeSlack
from tests.notifiers.conftest import ROUTING_KEY, SLACK_TOKEN, make_incident
from tests.pipeline.helpers import failed_job

WEBHOOK = "https://ops:s3cret@hooks.example.com/services/T000/B000/zzzzQx9z"


@pytest.fixture
def db(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("FIRSTFAULT_CONFIG", "FIRSTFAULT_SLACK_TOKEN", "FIRSTFAULT_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FIRSTFAULT_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("FIRSTFAULT_WEBHOOK_ALLOW_HOSTS", "hooks.example.com")
    return sqlite_url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_subscribe_list_and_unsubscribe(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "subscribe", "--team", "pretrain", "--tag", "nccl", "--signature", "xid.*",
                       "--slack", "#ml-oncall", "--pagerduty", ROUTING_KEY, "--webhook", WEBHOOK,
                       "--label", "env=prod",
                       "--quiet-hours", "22:00-07:00", "--timezone", "Europe/Paris")
    assert code == 0 and out.startswith("sub-")
    sub_id = out.strip()
    _, listed, _ = run(capsys, "subscriptions", "--format", "json")
    [sub] = json.loads(listed)
    assert sub["id"] == sub_id and sub["match"]["signatures"] == ["xid.*"] and sub["match"]["labels"] == {
        "env": "prod"}
    # Credentials are never printed: the routing key, and a webhook's user:password and secret path.
    assert sub["targets"] == ["slack:#ml-oncall", "pagerduty:…RRRR", "webhook:https://hooks.example.com/…Qx9z"]
    assert sub["quiet_hours"] == {"start": "22:00:00", "end": "07:00:00", "timezone": "Europe/Paris"}
    _, text, _ = run(capsys, "subscriptions")
    assert ROUTING_KEY not in text and "tags=nccl signatures=xid.*" in text
    assert "s3cret" not in text and "T000/B000" not in text and "webhook:https://hooks.example.com/…Qx9z" in text
    assert run(capsys, "unsubscribe", sub_id)[0] == 0
    assert json.loads(run(capsys, "subscriptions", "--format", "json")[1]) == []


@pytest.mark.parametrize(("argv", "message"), [
    (["subscribe", "--team", "t"], "needs a target"),
    (["subscribe", "--team", "t", "--webhook", "ftp://x"], "http(s) URL"),
    (["subscribe", "--team", "t", "--slack", "#c", "--severity", "fatal"], "severities"),
    (["subscribe", "--team", "t", "--slack", "#c", "--quiet-hours", "22"], "HH:MM-HH:MM"),
    (["subscribe", "--team", "t", "--slack", "#c", "--quiet-hours", "22:00-07:00", "--timezone", "Mars/Olympus"],
     "unknown time zone"),
    (["subscribe", "--team", "t", "--slack", "#c", "--mute-until", "2026-12-01T10:00"], "time zone"),
    (["subscribe", "--team", "t", "--pagerduty", "e+23rschqsESqk9Q6_-g"], "32 letters and digits"),
    (["unsubscribe", "sub-nope"], "no subscription"),
])
def test_bad_input_is_a_one_line_error_and_exit_2(db: str, capsys: pytest.CaptureFixture[str], argv: list[str],
                                                  message: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_deliver_then_outcomes_show_what_happened(db: str, capsys: pytest.CaptureFixture[str],
                                                  slack_server: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRSTFAULT_SLACK_TOKEN", SLACK_TOKEN)
    monkeypatch.setenv("FIRSTFAULT_SLACK_BASE_URL", slack_server.url)
    run(capsys, "subscribe", "--team", "pretrain", "--tag", "oom", "--slack", "#ml-oncall")
    run(capsys, "subscribe", "--team", "infra", "--signature", "pytorch.c10d.*", "--pagerduty", ROUTING_KEY)
    incident = make_incident()
    store = Store.open(db)
    now = datetime.now(UTC)
    store.record_job(failed_job(incident.job_id), now)
    store.save_incident(incident.job_id, lambda cur: incident, on_saved(lambda: now))
    store.close()
    code, out, _ = run(capsys, "deliver")
    assert code == 0 and "sent" in out
    [post] = slack_server.posts("#ml-oncall")
    _, out, _ = run(capsys, "outcomes", "--incident", incident.id, "--format", "json")
    by_target = {r["target"]: r for r in json.loads(out)}
    assert by_target["slack:#ml-oncall"]["outcome"] == "sent"
    assert by_target["slack:#ml-oncall"]["ref"] == f"C0ONCALL/{post.ts}"
    assert by_target["pagerduty:…RRRR"]["outcome"] == "suppressed_collateral"
    _, text, _ = run(capsys, "outcomes")
    assert "suppressed_collateral" in text and "pytorch.c10d.watchdog_timeout is collateral here" in text
