"""Acting on an incident from its Slack post (issue 26): the buttons, the two modals, and reading what Slack sends
back. Pure: no client, no store; the API route (api/slack_actions.py) does the work.

The post carries, while the incident is open, an ``actions`` block: Acknowledge, Resolve… (a modal asks for a
note), a menu "Mute this signature on this cluster" for N hours, and Not the cause… (a modal asks which rank
failed first). A click arrives as a ``block_actions`` payload (``actions[0].action_id`` and ``value``, ``user``,
``trigger_id``, ``container.message_ts``, ``channel.id``); a modal's submit as ``view_submission`` with
``view.callback_id``, ``view.private_metadata`` (what we put there when opening it: the incident and the post)
and ``view.state.values[block_id][action_id]``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Literal

from notifiers.slack_message import Block, escape
from schemas.incident import Incident
from store.actions import IncidentAction

ACK, RESOLVE, MUTE, NOT_CAUSE = "ff_ack", "ff_resolve", "ff_mute", "ff_not_cause"
MUTE_HOURS = (1, 4, 24, 72)
NOTE_BLOCK, RANK_BLOCK = "note", "rank"
MAX_NOTE = 2000

Kind = Literal["acknowledge", "mute", "open_resolve", "open_not_cause", "resolve", "not_the_cause"]


class BadPayload(ValueError):
    """Not an interaction we sent (an unknown action, a field missing): answered 400, nothing done."""


class BadInput(ValueError):
    """A modal's field the person must correct (a rank that is not a number): shown under that field."""

    def __init__(self, block_id: str, message: str) -> None:
        super().__init__(message)
        self.block_id = block_id


@dataclass(frozen=True)
class Interaction:
    kind: Kind
    incident_id: str
    user_id: str
    user_name: str
    channel: str | None  # the post's channel id and ts: the message to update
    ts: str | None
    trigger_id: str | None = None  # opens a modal (valid for 3 seconds)
    hours: int | None = None
    note: str = ""
    rank: int | None = None

    @property
    def actor(self) -> str:
        """Who, as the store records it."""
        return f"slack:{self.user_id} ({self.user_name})" if self.user_name else f"slack:{self.user_id}"


def action_blocks(incident: Incident) -> list[Block]:
    """The buttons of an open incident's post (none once it is resolved)."""
    if incident.state != "open":
        return []
    mute_options = [{"text": _plain(f"{h} hour{'s' if h > 1 else ''}"), "value": f"{incident.id}|{h}"}
                    for h in MUTE_HOURS]
    mute = [{"type": "static_select", "action_id": MUTE, "placeholder": _plain("Mute signature on cluster…"),
             "options": mute_options}] if incident.signature else []  # no signature: nothing a mute could match
    return [{"type": "actions", "block_id": "ff_actions", "elements": [
        {"type": "button", "action_id": ACK, "text": _plain("Acknowledge"), "value": incident.id},
        {"type": "button", "action_id": RESOLVE, "text": _plain("Resolve…"), "value": incident.id,
         "style": "primary"},
        *mute,
        {"type": "button", "action_id": NOT_CAUSE, "text": _plain("Not the cause…"), "value": incident.id,
         "style": "danger"},
    ]}]


def status_blocks(actions: Sequence[IncidentAction]) -> list[Block]:
    """What people did, one line each, under the diagnosis."""
    lines = [_status_line(a) for a in actions]
    if not lines:
        return []
    return [{"type": "context", "elements": [{"type": "mrkdwn", "text": "\n".join(lines[-8:])[:3000]}]}]


def _status_line(a: IncidentAction) -> str:
    who = _mention(a.actor)
    when = a.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if a.action == "acknowledge":
        return f"👀 Acknowledged by {who} at {when}"
    if a.action == "resolve":
        return f"✅ Resolved by {who} at {when}" + (f": {escape(a.note)}" if a.note else "")
    if a.action == "mute":
        until = a.mute_until.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if a.mute_until else "?"
        return f"🔕 `{escape(a.diagnosed_signature or 'no signature')}` muted on this cluster until {until} by {who}"
    return (f"❌ Not the cause, says {who} at {when}: rank {a.correct_rank} failed first"
            f" (diagnosed: rank {a.diagnosed_rank})")


def _mention(actor: str) -> str:
    user = actor.removeprefix("slack:").split(" ", 1)[0]
    return f"<@{user}>" if actor.startswith("slack:") else escape(actor)


def resolve_modal(interaction: Interaction) -> dict[str, Any]:
    return _modal(RESOLVE, "Resolve incident", "Resolve", interaction, [
        _input(NOTE_BLOCK, "What was done", {"type": "plain_text_input", "action_id": NOTE_BLOCK, "multiline": True,
                                             "max_length": MAX_NOTE}, optional=True)])


def not_cause_modal(interaction: Interaction) -> dict[str, Any]:
    return _modal(NOT_CAUSE, "Not the cause", "Record", interaction, [
        _input(RANK_BLOCK, "Which rank failed first?", {"type": "number_input", "action_id": RANK_BLOCK,
                                                        "is_decimal_allowed": False, "min_value": "0"}),
        _input(NOTE_BLOCK, "How do you know? (optional)", {"type": "plain_text_input", "action_id": NOTE_BLOCK,
                                                           "multiline": True, "max_length": MAX_NOTE},
               optional=True)])


def _modal(callback_id: str, title: str, submit: str, interaction: Interaction, blocks: list[Block]
           ) -> dict[str, Any]:
    where = {"incident": interaction.incident_id, "channel": interaction.channel, "ts": interaction.ts}
    return {"type": "modal", "callback_id": callback_id, "title": _plain(title), "submit": _plain(submit),
            "close": _plain("Cancel"), "private_metadata": json.dumps(where), "blocks": blocks}


def _input(block_id: str, label: str, element: dict[str, Any], optional: bool = False) -> Block:
    return {"type": "input", "block_id": block_id, "label": _plain(label), "element": element, "optional": optional}


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def parse(payload: dict[str, Any]) -> Interaction:
    """The interaction a payload asks for; BadPayload when it is none of ours, BadInput for a field to fix."""
    kind = payload.get("type")
    user = payload.get("user") or {}
    who = (str(user.get("id") or ""), str(user.get("username") or user.get("name") or ""))
    if not who[0]:
        raise BadPayload("no user")
    if kind == "block_actions":
        return _clicked(payload, who)
    if kind == "view_submission":
        return _submitted(payload, who)
    raise BadPayload(f"unhandled payload type {kind!r}")


def _clicked(payload: dict[str, Any], who: tuple[str, str]) -> Interaction:
    actions = payload.get("actions") or []
    if not actions:
        raise BadPayload("no action")
    action = actions[0]
    channel = (payload.get("channel") or {}).get("id") or (payload.get("container") or {}).get("channel_id")
    ts = (payload.get("container") or {}).get("message_ts")
    trigger = payload.get("trigger_id")
    action_id = action.get("action_id")
    if action_id == MUTE:
        value = str((action.get("selected_option") or {}).get("value") or "")
        incident_id, _, hours = value.rpartition("|")
        if not incident_id or not hours.isdigit() or int(hours) not in MUTE_HOURS:
            raise BadPayload(f"mute option {value!r}")
        return Interaction("mute", incident_id, *who, channel, ts, trigger, hours=int(hours))
    kinds: dict[str, Kind] = {ACK: "acknowledge", RESOLVE: "open_resolve", NOT_CAUSE: "open_not_cause"}
    if action_id not in kinds or not action.get("value"):
        raise BadPayload(f"unknown action {action_id!r}")
    return Interaction(kinds[action_id], str(action["value"]), *who, channel, ts, trigger)


def _submitted(payload: dict[str, Any], who: tuple[str, str]) -> Interaction:
    view = payload.get("view") or {}
    try:
        where = json.loads(view.get("private_metadata") or "")
    except json.JSONDecodeError as exc:
        raise BadPayload("private_metadata is not ours") from exc
    if not isinstance(where, dict) or not where.get("incident"):
        raise BadPayload("private_metadata names no incident")
    values = (view.get("state") or {}).get("values") or {}
    note = str(_value(values, NOTE_BLOCK) or "").strip()[:MAX_NOTE]
    base = (str(where["incident"]), *who, where.get("channel"), where.get("ts"))
    if view.get("callback_id") == RESOLVE:
        return Interaction("resolve", *base, note=note)
    if view.get("callback_id") == NOT_CAUSE:
        rank = str(_value(values, RANK_BLOCK) or "").strip()
        if not rank.isdigit():
            raise BadInput(RANK_BLOCK, "a rank is a whole number, 0 or more")
        return Interaction("not_the_cause", *base, note=note, rank=int(rank))
    raise BadPayload(f"unknown view {view.get('callback_id')!r}")


def _value(values: dict[str, Any], block_id: str) -> Any:
    return ((values.get(block_id) or {}).get(block_id) or {}).get("value")
