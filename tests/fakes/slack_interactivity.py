"""Slack's side of interactivity, for tests: what Slack POSTs to an app's Request URL when someone clicks a button
of a post or submits a modal, signed as Slack signs it (https://api.slack.com/authentication/verifying-requests-
from-slack): ``X-Slack-Signature: v0=`` + hex HMAC-SHA256 of ``v0:{timestamp}:{body}`` with the signing secret,
and ``X-Slack-Request-Timestamp``; the body is ``payload=<JSON>``, form-encoded.

Each click hands the fake Slack a fresh ``trigger_id`` (views.open accepts it once), as Slack does."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

from tests.fakes.slack_api import FakeSlack, Message


def signed_headers(secret: str, timestamp: int, body: bytes) -> dict[str, str]:
    base = b"v0:" + str(timestamp).encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": str(timestamp), "X-Slack-Signature": f"v0={digest}",
            "Content-Type": "application/x-www-form-urlencoded"}


def form_body(payload: dict[str, Any]) -> bytes:
    return urlencode({"payload": json.dumps(payload)}).encode()


@dataclass
class SlackUser:
    """Someone in the workspace, clicking through the fake Slack's posts into the app at ``http``."""

    slack: FakeSlack
    http: httpx.Client
    secret: str
    user_id: str = "U0ALICE"
    name: str = "alice"
    _clicks: int = 0

    def send(self, payload: dict[str, Any], timestamp: int, secret: str | None = None) -> httpx.Response:
        body = form_body(payload)
        return self.http.post("/slack/actions", content=body,
                              headers=signed_headers(secret or self.secret, timestamp, body))

    def click(self, message: Message, action_id: str, timestamp: int, option: str | None = None) -> httpx.Response:
        """A block_actions payload for the element ``action_id`` of ``message`` (a menu: the option's value)."""
        return self.send(self.click_payload(message, action_id, option), timestamp)

    def click_payload(self, message: Message, action_id: str, option: str | None = None) -> dict[str, Any]:
        element = next(e for b in message.blocks if b["type"] == "actions" for e in b["elements"]
                       if e["action_id"] == action_id)
        action: dict[str, Any] = {"type": element["type"], "action_id": action_id, "block_id": "ff_actions",
                                  "action_ts": "1700000000.000100"}
        if element["type"] == "static_select":
            chosen = next(o for o in element["options"] if o["value"].endswith(f"|{option}"))
            action["selected_option"] = chosen
        else:
            action["value"] = element["value"]
        self._clicks += 1
        trigger = f"{self._clicks}.trigger"
        with self.slack.lock:
            self.slack.triggers.add(trigger)
        return {"type": "block_actions", "user": self._user(), "api_app_id": "A0FF", "token": "legacy",
                "container": {"type": "message", "message_ts": message.ts, "channel_id": message.channel,
                              "is_ephemeral": False},
                "trigger_id": trigger, "team": {"id": "T0TEAM", "domain": "example"},
                "channel": {"id": message.channel, "name": "ml-oncall"}, "message": {"ts": message.ts},
                "response_url": "https://hooks.slack.com/actions/T0TEAM/1/x", "actions": [action]}

    def submit(self, view: dict[str, Any], values: dict[str, str], timestamp: int) -> httpx.Response:
        """A view_submission of the modal ``view`` with these inputs (block_id = action_id = key)."""
        state = {block: {block: {"type": "plain_text_input", "value": value}} for block, value in values.items()}
        return self.send({"type": "view_submission", "user": self._user(), "team": {"id": "T0TEAM"},
                          "view": {**view, "state": {"values": state}}, "api_app_id": "A0FF"}, timestamp)

    def _user(self) -> dict[str, str]:
        return {"id": self.user_id, "username": self.name, "name": self.name, "team_id": "T0TEAM"}
