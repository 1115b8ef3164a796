"""The Slack calls an action from Slack makes (issue 26), through slack-sdk's WebClient like every post:
``chat.update`` of the incident's post to show its new state and who did what, and ``views.open`` for the
modals (Resolve's note, Not the cause's rank). Errors are translated as notifiers/slack.py does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk import WebClient

from notifiers.settings import NotifySettings
from notifiers.slack import SlackNotifier, _call
from notifiers.slack_actions import action_blocks, status_blocks
from notifiers.slack_message import MAX_BLOCKS, fallback_text, incident_blocks
from schemas.incident import Incident
from store.actions import IncidentAction


class SlackPost:
    def __init__(self, settings: NotifySettings, client: WebClient | None = None) -> None:
        self.settings = settings
        self.client = client or SlackNotifier(settings).client

    def show(self, incident: Incident, actions: Sequence[IncidentAction], channel: str, ts: str) -> None:
        """Edit the post in place: the diagnosis, what people did, and the buttons while it is open."""
        url = self.settings.incident_url(incident.id)
        extra = status_blocks(actions) + action_blocks(incident)
        blocks = incident_blocks(incident, url)[: MAX_BLOCKS - len(extra)] + extra
        _call(self.client.chat_update, channel=channel, ts=ts, text=fallback_text(incident, url), blocks=blocks)

    def open_modal(self, trigger_id: str, view: dict[str, Any]) -> None:
        _call(self.client.views_open, trigger_id=trigger_id, view=view)
