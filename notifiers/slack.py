"""Slack through slack-sdk's WebClient: ``chat.postMessage`` for the root post, ``chat.update`` of the root and
a thread reply (``thread_ts``) for each revision and the resolution.

Errors are translated here, at the edge: HTTP 429 → RateLimited with Retry-After (the outbox schedules the retry;
nothing sleeps — no RateLimitErrorRetryHandler, and no retry handlers at all, since the built-in connection retry
sleeps too); connection failures and 5xx → TransportError; ``ok: false`` errors Slack documents as permanent
(``invalid_auth``, ``channel_not_found``, ``invalid_blocks``, ``msg_too_long``…) → Rejected with the reason.

Every message carries Slack message metadata ``firstfault_delivery`` with the incident id, the revision and the
delivery id, so that ``find_sent`` can tell whether a post made before a crash already reached the channel.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web import SlackResponse

from notifiers.base import Delivery, RateLimited, Rejected, retry_after_seconds
from notifiers.settings import NotifySettings
from notifiers.slack_actions import action_blocks
from notifiers.slack_message import MAX_BLOCKS, Block, fallback_text, incident_blocks, revision_reply
from schemas.errors import RetryableError, TransportError
from schemas.incident import Incident
from schemas.subscription import TargetKind

EVENT_TYPE = "firstfault_delivery"
# ok:false errors worth retrying; every other error is permanent (a retry would fail the same way)
TRANSIENT_ERRORS = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable",
                              "request_timeout", "team_added_to_org"})
HISTORY_LIMIT = 200
ROOT_GONE = frozenset({"message_not_found", "cant_update_message", "edit_window_closed"})
CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{6,}")


class SlackNotifier:
    kind: TargetKind = "slack"

    def __init__(self, settings: NotifySettings, client: WebClient | None = None,
                 status: Callable[[str], list[Block]] | None = None) -> None:
        """``status``: what people did to an incident (from Slack), shown on its post so that a revision's edit
        keeps it (notifiers/wiring.py passes it when the post carries buttons)."""
        self.settings = settings
        self.status = status
        if client is None:
            token = settings.slack_token.get_secret_value() if settings.slack_token else None
            client = WebClient(token=token, base_url=settings.slack_api_url, timeout=int(settings.timeout_s),
                               retry_handlers=[])
        self.client = client

    def send(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery:
        url = self.settings.incident_url(incident.id)
        metadata = _metadata(incident, delivery_id)
        if root_ref is not None and not CHANNEL_ID.fullmatch(split_ref(root_ref)[0]):
            root_ref = None  # printed on the console before a Slack token was set: start a Slack thread now
        if root_ref is None:
            posted = _call(self.client.chat_postMessage, channel=address, text=fallback_text(incident, url),
                           blocks=self.root_blocks(incident, url), metadata=metadata,
                           unfurl_links=False, unfurl_media=False)
            return Delivery(ref=f"{posted['channel']}/{posted['ts']}", detail="posted")
        channel, ts = split_ref(root_ref)
        try:
            _call(self.client.chat_update, channel=channel, ts=ts, text=fallback_text(incident, url),
                  blocks=self.root_blocks(incident, url))
        except Rejected as exc:
            if exc.reason not in ROOT_GONE:
                raise
            return self.send(incident, channel, None, delivery_id)  # someone deleted the root: post a new one
        text, blocks = revision_reply(incident, url)
        reply = _call(self.client.chat_postMessage, channel=channel, thread_ts=ts, text=text, blocks=blocks,
                      metadata=metadata, reply_broadcast=_resolution(incident),
                      unfurl_links=False, unfurl_media=False)
        return Delivery(ref=root_ref, detail=f"root updated, thread reply {reply['ts']}")

    def root_blocks(self, incident: Incident, url: str) -> list[Block]:
        """The root post; with the action buttons when Slack's requests can be answered (a signing secret)."""
        extra = self.status(incident.id) if self.status is not None else []
        extra += action_blocks(incident) if self.settings.slack_actions else []
        return incident_blocks(incident, url)[: MAX_BLOCKS - len(extra)] + extra

    def close(self) -> None:
        pass  # nothing held open: each call is its own request

    def find_sent(self, incident: Incident, address: str, root_ref: str | None, delivery_id: str) -> Delivery | None:
        if root_ref is None:
            channel = self.channel_id(address)
            history = _call(self.client.conversations_history, channel=channel, include_all_metadata=True,
                            limit=HISTORY_LIMIT)
        else:
            channel, ts = split_ref(root_ref)
            history = _call(self.client.conversations_replies, channel=channel, ts=ts, include_all_metadata=True,
                            limit=HISTORY_LIMIT)
        for message in history.get("messages") or []:
            payload = (message.get("metadata") or {}).get("event_payload") or {}
            if message.get("metadata", {}).get("event_type") == EVENT_TYPE and payload.get("delivery_id") == \
                    delivery_id:
                ref = root_ref or f"{channel}/{message['ts']}"
                return Delivery(ref=ref, detail="found already posted")
        return None


    def channel_id(self, address: str) -> str:
        """The channel id for ``#name`` (history needs ids; posting accepts names). Rare: only on recovery."""
        if CHANNEL_ID.fullmatch(address):
            return address
        name, cursor = address.removeprefix("#"), None
        while True:
            page = _call(self.client.conversations_list, types="public_channel,private_channel",
                         exclude_archived=True, limit=1000, cursor=cursor)
            for channel in page.get("channels") or []:
                if channel.get("name") == name:
                    return str(channel["id"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                raise Rejected("channel_not_found", f"no channel named {address}")


def _resolution(incident: Incident) -> bool:
    """A resolution's reply is also shown in the channel; a resolved incident told of its regression is not (the
    regression has a post of its own there)."""
    return incident.state == "resolved" and incident.regressed_by is None


def split_ref(ref: str) -> tuple[str, str]:
    channel, _, ts = ref.rpartition("/")
    return channel, ts


def _metadata(incident: Incident, delivery_id: str) -> dict[str, Any]:
    return {"event_type": EVENT_TYPE, "event_payload": {
        "incident_id": incident.id, "revision": incident.revision, "delivery_id": delivery_id}}


def _call(method: Callable[..., SlackResponse], **kwargs: Any) -> SlackResponse:
    try:
        return method(**kwargs)
    except SlackApiError as exc:
        raise translate(exc.response) from exc
    except (URLError, OSError, SlackRequestError) as exc:  # refused, reset, timed out, DNS
        raise TransportError(f"slack unreachable: {exc}") from exc


def translate(response: SlackResponse) -> RetryableError | Rejected:
    """A failed Slack response as firstfault's error: what to do about it, and why."""
    headers = {str(k): str(v) for k, v in (response.headers or {}).items()}
    status = response.status_code
    error = response.get("error") if isinstance(response.data, dict) else None
    if status == 429 or error == "ratelimited":
        return RateLimited("slack rate limited", retry_after=retry_after_seconds(headers, 1.0))
    if status >= 500:
        return TransportError(f"slack HTTP {status}", retry_after=retry_after_seconds(headers))
    if error in TRANSIENT_ERRORS:
        return TransportError(f"slack error {error}", retry_after=retry_after_seconds(headers))
    return Rejected(str(error or f"http_{status}"), _details(response))


def _details(response: SlackResponse) -> str:
    meta = response.get("response_metadata") if isinstance(response.data, dict) else None
    messages = meta.get("messages") if isinstance(meta, dict) else None
    return "; ".join(str(m) for m in messages[:3]) if isinstance(messages, list) else ""
