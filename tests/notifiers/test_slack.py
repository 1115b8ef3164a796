"""Slack through slack-sdk against the local fake Web API: post, edit, thread, recover, rate limits."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from notifiers.base import RateLimited, Rejected
from notifiers.slack import SlackNotifier, translate
from tests.fakes.slack_api import FakeSlack
from tests.notifiers.conftest import SLACK_TOKEN, make_incident, settings_for


def test_the_first_delivery_posts_a_root_message_with_blocks_and_our_metadata(slack_server: FakeSlack) -> None:
    incident = make_incident()
    delivery = SlackNotifier(settings_for(slack_server)).send(incident, "#ml-oncall", None, "d-1")
    [post] = slack_server.posts("#ml-oncall")
    assert delivery.ref == f"C0ONCALL/{post.ts}"
    assert post.blocks[0]["type"] == "header" and "Linux OOM killer" in post.text
    assert post.metadata == {"event_type": "firstfault_delivery",
                             "event_payload": {"incident_id": incident.id, "revision": 1, "delivery_id": "d-1"}}


def test_a_revision_edits_the_root_and_replies_in_its_thread(slack_server: FakeSlack) -> None:
    notifier = SlackNotifier(settings_for(slack_server))
    root = notifier.send(make_incident(), "#ml-oncall", None, "d-1").ref
    revised = make_incident(revision=2, changes=["initiating rank 37 → 12: node002's kernel log arrived"])
    revised.diagnosis.root_cause.rank = 12  # type: ignore[union-attr]
    assert notifier.send(revised, "#ml-oncall", root, "d-2").ref == root
    [post] = slack_server.posts("#ml-oncall")
    assert len(post.edits) == 1 and "rank 12 on node004" in str(post.blocks)
    [reply] = slack_server.replies("#ml-oncall", post.ts)
    assert reply.text.startswith("Revision 2") and "node002" in reply.text


def test_a_deleted_root_message_is_posted_again_on_the_next_revision(slack_server: FakeSlack) -> None:
    notifier = SlackNotifier(settings_for(slack_server))
    root = notifier.send(make_incident(), "#ml-oncall", None, "d-1").ref
    slack_server.messages.clear()  # someone deleted the post
    new_root = notifier.send(make_incident(revision=2, changes=["x"]), "#ml-oncall", root, "d-2").ref
    [post] = slack_server.posts("#ml-oncall")
    assert new_root == f"C0ONCALL/{post.ts}" != root and "revision 2" in str(post.blocks)


def test_the_resolution_flips_the_root_and_says_so_in_the_thread(slack_server: FakeSlack) -> None:
    notifier = SlackNotifier(settings_for(slack_server))
    root = notifier.send(make_incident(), "#ml-oncall", None, "d-1").ref
    notifier.send(make_incident(revision=2, state="resolved", changes=["attempt 1 succeeded"]), "#ml-oncall", root,
                  "d-2")
    [post] = slack_server.posts("#ml-oncall")
    assert post.blocks[0]["text"]["text"].startswith("✅ Resolved")
    assert slack_server.replies("#ml-oncall", post.ts)[0].text.startswith("Resolved")


def test_find_sent_recognises_a_post_that_reached_slack_before_a_crash(slack_server: FakeSlack) -> None:
    notifier = SlackNotifier(settings_for(slack_server))
    incident = make_incident()
    assert notifier.find_sent(incident, "C0ONCALL", None, "d-1") is None
    ref = notifier.send(incident, "C0ONCALL", None, "d-1").ref
    notifier.send(make_incident(job_id="other-job"), "C0ONCALL", None, "d-9")
    found = notifier.find_sent(incident, "C0ONCALL", None, "d-1")
    assert found is not None and found.ref == ref
    assert notifier.find_sent(incident, "C0ONCALL", ref, "d-2") is None
    notifier.send(make_incident(revision=2, changes=["x"]), "C0ONCALL", ref, "d-2")
    assert notifier.find_sent(incident, "C0ONCALL", ref, "d-2") is not None


def test_over_one_post_per_second_in_a_channel_is_a_429_with_retry_after() -> None:
    server = FakeSlack(tokens={SLACK_TOKEN}, posts_per_second=1, clock=lambda: 1_000.0).start()
    try:
        notifier = SlackNotifier(settings_for(server))
        notifier.send(make_incident(), "#ml-oncall", None, "d-1")
        with pytest.raises(RateLimited) as caught:
            notifier.send(make_incident(job_id="second"), "#ml-oncall", None, "d-2")
        assert caught.value.retry_after == 1.0
        notifier.send(make_incident(job_id="other-channel"), "#infra", None, "d-3")  # channels are paced apart
        assert len(server.messages) == 2
    finally:
        server.stop()


@pytest.mark.parametrize(("blocks", "error"), [
    ([{"type": "divider"}] * 51, "invalid_blocks"),
    ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}], "invalid_blocks"),
    ([{"type": "section", "text": {"type": "mrkdwn", "text": "s" * 3001}}], "invalid_blocks"),
    ([{"type": "section", "text": {"type": "mrkdwn", "text": "s" * 2900}}] * 5, "msg_blocks_too_long"),
])
def test_the_fake_enforces_slacks_block_limits_like_slack(slack_server: FakeSlack, blocks: list[dict[str, Any]],
                                                          error: str) -> None:
    client = WebClient(token=SLACK_TOKEN, base_url=slack_server.url, retry_handlers=[])
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="#ml-oncall", text="t", blocks=blocks)
    translated = translate(caught.value.response)
    assert isinstance(translated, Rejected) and translated.reason == error


def test_a_message_over_40k_characters_is_msg_too_long(slack_server: FakeSlack) -> None:
    client = WebClient(token=SLACK_TOKEN, base_url=slack_server.url, retry_handlers=[])
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="#ml-oncall", text="x" * 40_001)
    assert caught.value.response["error"] == "msg_too_long"


def test_no_token_is_not_authed(slack_server: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as caught:
        WebClient(base_url=slack_server.url, retry_handlers=[]).chat_postMessage(channel="#ml-oncall", text="t")
    assert caught.value.response["error"] == "not_authed"


def test_the_fake_takes_form_bodies_and_token_parameters_too(slack_server: FakeSlack) -> None:
    client = WebClient(base_url=slack_server.url, retry_handlers=[])
    posted = client.api_call("chat.postMessage", data={"token": SLACK_TOKEN, "channel": "C0INFRA", "text": "form"})
    assert posted["channel"] == "C0INFRA" and slack_server.posts("C0INFRA")[0].text == "form"


def test_no_secret_from_the_logs_reaches_slack_in_any_request(slack_server: FakeSlack) -> None:
    token = "xoxb-2814-9923001-aZ3kQ8vLm1PdX0rT9wE7yB5c"
    incident = make_incident(evidence=[f"[rank3]: SLACK_BOT_TOKEN={token}", "password=hunter22 in argv"])
    incident.diagnosis.root_cause.explanation.append(f"saw {token}")  # type: ignore[union-attr]
    incident.diagnosis.root_cause.host = f"node-{token}"  # type: ignore[union-attr]
    notifier = SlackNotifier(settings_for(slack_server))
    root = notifier.send(incident, "#ml-oncall", None, "d-1").ref
    notifier.send(incident.model_copy(update={"revision": 2, "changes": [f"new line {token}"]}), "#ml-oncall",
                  root, "d-2")
    sent = b"".join(r.body for r in slack_server.requests)
    assert len(slack_server.requests) == 3
    assert token.encode() not in sent and b"hunter22" not in sent


def test_an_incident_first_printed_on_the_console_gets_a_fresh_slack_root(slack_server: FakeSlack) -> None:
    SlackNotifier(settings_for(slack_server)).send(make_incident(revision=2, changes=["x"]), "#ml-oncall",
                                                   "console/inc-1", "d-2")
    assert len(slack_server.posts("#ml-oncall")) == 1
