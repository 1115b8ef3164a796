"""Acting from Slack (issue 26), end to end: an incident from 64 ranks of logs through the real pipeline and outbox,
posted with its buttons to the fake Slack by slack-sdk; clicks and modal submissions POSTed to the real app
(uvicorn on 127.0.0.1) signed as Slack signs them; the store on SQLite and PostgreSQL; the post edited through
slack-sdk's chat.update. Reads need a read token here, so the Slack route is shown to need only its signature."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from notifiers.slack_actions import action_blocks
from schemas.diagnosis import Diagnosis
from schemas.incident import Incident
from schemas.subscription import Match, Subscription, Target
from store.actions import ActionStore
from tests.fakes.pagerduty_api import FakePagerDuty
from tests.fakes.slack_api import FakeSlack, Message
from tests.fakes.slack_interactivity import SlackUser
from tests.notifiers.conftest import SLACK_TOKEN, make_incident
from tests.notifiers.helpers import Served, served
from tests.pipeline.helpers import EXAMPLE, shards_of

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # a made-up signing secret, for these tests only
TOKEN, READ = "write-token", "read-token"
READ_AUTH = {"Authorization": f"Bearer {READ}"}
JOB = "j-slack-1"


@dataclass
class World(Served):
    alice: SlackUser

    @property
    def ts(self) -> int:
        return int(self.clock.now.timestamp())

    def fail(self, job: str = JOB, with_dmesg: bool = True, cluster: str = "c1") -> Incident:
        return super().fail(job, with_dmesg, cluster)

    def post(self) -> Message:
        return self.slack.posts("#ml-oncall")[-1]

    def text(self) -> str:
        return str(self.post().blocks)


@pytest.fixture
def world(db_url: str, slack_server: FakeSlack, pagerduty_server: FakePagerDuty) -> Iterator[World]:
    oncall = Subscription(id="oncall", team="llm", match=Match(tags=["memory", "straggler"]),
                          targets=[Target(kind="slack", address="#ml-oncall")])
    with served(db_url, slack_server, pagerduty_server, oncall, slack_actions=True, api_token=TOKEN,
                api_read_token=READ, slack_token=SLACK_TOKEN, slack_base_url=slack_server.url,
                slack_signing_secret=SECRET) as it:
        yield World(**vars(it), alice=SlackUser(slack_server, it.http, SECRET))


def _actions(w: World, incident: Incident) -> list[dict[str, Any]]:
    answer = w.http.get(f"/v1/incidents/{incident.id}/actions", headers=READ_AUTH)
    assert answer.status_code == 200, answer.text
    return list(answer.json())


def test_acknowledge_is_recorded_with_who_and_when_and_shown_on_the_post(world: World) -> None:
    incident = world.fail()
    assert "Acknowledge" in world.text() and "Not the cause" in world.text()
    world.clock.advance(120)
    answer = world.alice.click(world.post(), "ff_ack", world.ts)
    assert answer.status_code == 200, answer.text
    [ack] = _actions(world, incident)
    assert ack["action"] == "acknowledge" and ack["actor"] == "slack:U0ALICE (alice)"
    assert ack["at"].startswith(world.clock.now.isoformat()[:19])
    post = world.post()
    assert len(post.edits) == 1 and "Acknowledged by <@U0ALICE>" in str(post.blocks)
    assert post.blocks[-1]["type"] == "actions"  # still open: the buttons stay


def test_what_people_did_stays_on_the_post_when_late_logs_revise_it(world: World) -> None:
    first = world.fail(with_dmesg=False)  # the survivors' logs alone: rank 37 straggled (desync_not_joined)
    assert world.alice.click(world.post(), "ff_ack", world.ts).status_code == 200
    for shard in shards_of(JOB, EXAMPLE):  # then node004's dmesg: the OOM kill, revision 2
        if shard.stream == "dmesg":
            world.pipe.accept_shard(shard)
    world.clock.advance(11)
    revised = world.pipe.correlate(JOB)
    assert revised is not None and revised.id == first.id and revised.revision == 2
    world.deliver()
    post = world.post()
    assert len(post.edits) == 2 and "host.oom_killer" in str(post.blocks)  # ours, then the revision's
    assert "Acknowledged by <@U0ALICE>" in str(post.blocks) and post.blocks[-1]["type"] == "actions"


def test_requests_slack_did_not_sign_are_refused_and_change_nothing(world: World) -> None:
    incident = world.fail()
    payload = world.alice.click_payload(world.post(), "ff_ack")
    wrong_secret = world.alice.send(payload, world.ts, secret="not-the-signing-secret")
    stale = world.alice.send(payload, world.ts - 301)  # Slack: older than 5 minutes
    early = world.alice.send(payload, world.ts + 301)
    unsigned = world.http.post("/slack/actions", content=b"payload=%7B%7D",
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert [r.status_code for r in (wrong_secret, stale, early, unsigned)] == [401] * 4
    assert "stale" in stale.json()["detail"]
    assert _actions(world, incident) == [] and world.post().edits == []

    first = world.alice.send(payload, world.ts - 299)  # inside the window: accepted once
    replayed = world.alice.send(payload, world.ts - 299)
    assert first.status_code == 200 and replayed.status_code == 401 and "replay" in replayed.json()["detail"]
    assert len(_actions(world, incident)) == 1


def test_a_signed_request_that_is_not_ours_is_a_400(world: World) -> None:
    world.fail()
    assert world.alice.send({"type": "shortcut", "user": {"id": "U0ALICE"}}, world.ts).status_code == 400
    bad = world.alice.click_payload(world.post(), "ff_ack")
    bad["actions"][0]["action_id"] = "something_else"
    assert world.alice.send(bad, world.ts + 1).status_code == 400
    gone = world.alice.click_payload(world.post(), "ff_ack")
    gone["actions"][0]["value"] = "inc-0000000000000000"
    assert world.alice.send(gone, world.ts + 2).status_code == 404


def test_resolve_asks_for_a_note_then_resolves_through_the_store_and_the_thread_says_it(world: World) -> None:
    incident = world.fail()
    assert world.alice.click(world.post(), "ff_resolve", world.ts).status_code == 200
    [modal] = world.slack.views
    assert modal["callback_id"] == "ff_resolve" and _actions(world, incident) == []
    world.clock.advance(30)
    done = world.alice.submit(modal, {"note": "drained node004, restarted with 4 workers"}, world.ts)
    assert done.status_code == 200, done.text
    assert world.store.incident(incident.id).state == "resolved"  # type: ignore[union-attr]
    [resolved] = _actions(world, incident)
    assert resolved["action"] == "resolve" and resolved["note"] == "drained node004, restarted with 4 workers"
    assert "Resolved by <@U0ALICE>" in world.text() and "actions" not in [b["type"] for b in world.post().blocks]
    world.deliver()  # the outbox: the thread reply with the note, as resolving over the API does
    [reply] = world.slack.replies("#ml-oncall", world.post().ts)
    assert "drained node004" in reply.text


def test_mute_silences_the_signature_on_that_cluster_until_the_mute_ends(world: World) -> None:
    incident = world.fail()
    assert world.alice.click(world.post(), "ff_mute", world.ts, option="4").status_code == 200
    [mute] = _actions(world, incident)
    assert mute["diagnosed_signature"] == "host.oom_killer" and mute["action"] == "mute"
    assert "muted on this cluster until" in world.text()

    world.fail("j-slack-2")  # the same failure on the same cluster: not posted
    assert len(world.slack.posts("#ml-oncall")) == 1
    with world.store.notify() as tx:
        [row] = [r for r in tx.recent_outbox(None, 10) if r.incident_id != incident.id]
        assert row.status == "muted" and "host.oom_killer muted on c1" in row.reason

    world.fail("j-slack-3", cluster="c2")  # another cluster: posted
    assert len(world.slack.posts("#ml-oncall")) == 2
    world.clock.advance(4 * 3600)
    world.fail("j-slack-4")  # the mute has ended
    assert len(world.slack.posts("#ml-oncall")) == 3


def test_not_the_cause_asks_for_the_rank_and_keeps_a_labelled_example(world: World) -> None:
    incident = world.fail()
    assert world.alice.click(world.post(), "ff_not_cause", world.ts).status_code == 200
    [modal] = world.slack.views
    wrong = world.alice.submit(modal, {"rank": "twelve"}, world.ts)
    assert wrong.status_code == 200 and wrong.json()["response_action"] == "errors"
    assert "rank" in wrong.json()["errors"] and _actions(world, incident) == []

    right = world.alice.submit(modal, {"rank": "12", "note": "rank 12's NIC flapped first"}, world.ts + 1)
    assert right.status_code == 200, right.text
    [label] = _actions(world, incident)
    assert (label["diagnosed_rank"], label["correct_rank"], label["diagnosed_signature"]) == (37, 12,
                                                                                              "host.oom_killer")
    assert ActionStore(world.store).labelled_examples()[0].correct_rank == 12
    assert "Not the cause, says <@U0ALICE>" in world.text() and "rank 12 failed first" in world.text()


def test_the_buttons_go_once_resolved_and_a_post_without_signature_offers_no_mute() -> None:
    [buttons] = action_blocks(make_incident())
    assert [e["action_id"] for e in buttons["elements"]] == ["ff_ack", "ff_resolve", "ff_mute", "ff_not_cause"]
    assert action_blocks(make_incident(state="resolved")) == []
    unknown = make_incident(diagnosis=Diagnosis(verdict="no_known_signature", root_cause=None))
    assert "ff_mute" not in str(action_blocks(unknown))
