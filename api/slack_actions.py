"""POST /slack/actions: Slack's interactivity Request URL (issue 26). Slack posts
``application/x-www-form-urlencoded`` with one field, ``payload`` (JSON), and signs it: ``X-Slack-Signature:
v0=<hex>`` is HMAC-SHA256 of ``v0:{X-Slack-Request-Timestamp}:{raw body}`` with the app's signing secret.

A request is refused (401, nothing done) when its signature is wrong, its timestamp is more than 5 minutes from
our clock, or its signature was already seen within those 5 minutes (a replay: the store remembers them, so a
replay to another replica is refused too). Checked by slack_sdk's SignatureVerifier on the raw bytes, before the
body is parsed. Then the action goes through the store (who and when), and the post is edited (chat.update).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from slack_sdk.signature import Clock as SignatureClock
from slack_sdk.signature import SignatureVerifier
from starlette.concurrency import run_in_threadpool

from api.history import answers, clock_of
from catalog.loader import Catalog
from notifiers.outbox import collateral_ids, on_saved
from notifiers.slack_actions import BadInput, BadPayload, Interaction, not_cause_modal, parse, resolve_modal
from notifiers.slack_post import SlackPost
from schemas.errors import FirstfaultError
from store.actions import ActionStore, IncidentAction
from store.incidents import Store

log = logging.getLogger("firstfault.api")
WINDOW = timedelta(minutes=5)  # Slack's: a timestamp further from now is refused, so replays need remembering this long


class ActionOut(BaseModel):
    action: str
    actor: str
    at: datetime
    note: str
    diagnosed_rank: int | None
    diagnosed_signature: str | None
    correct_rank: int | None
    mute_until: datetime | None


class _At(SignatureClock):
    """The verifier's clock is ours (tests move a ManualClock), not time.time."""

    def __init__(self, now: datetime) -> None:
        self.at = now.timestamp()

    def now(self) -> float:
        return self.at


@dataclass
class SlackActions:
    store: Store
    actions: ActionStore
    post: SlackPost
    catalog: Catalog
    signing_secret: str

    def verify(self, body: bytes, headers: dict[str, str], now: datetime) -> None:
        verifier = SignatureVerifier(self.signing_secret, clock=_At(now))
        try:
            valid = verifier.is_valid_request(body, headers)
        except ValueError:  # a timestamp that is not a number
            valid = False
        if not valid:
            raise HTTPException(status_code=401, detail="bad or stale Slack signature")
        if not self.actions.first_sight(headers.get("x-slack-signature", ""), now, WINDOW):
            raise HTTPException(status_code=401, detail="this signed request was already handled (a replay)")

    def handle(self, interaction: Interaction, now: datetime) -> None:
        incident = self.store.incident(interaction.incident_id)
        if incident is None:
            raise HTTPException(status_code=404, detail=f"no incident {interaction.incident_id!r}")
        kind = interaction.kind
        if kind in ("open_resolve", "open_not_cause"):
            if not interaction.trigger_id:
                raise HTTPException(status_code=400, detail="no trigger_id to open a modal with")
            modal = resolve_modal if kind == "open_resolve" else not_cause_modal
            self.post.open_modal(interaction.trigger_id, modal(interaction))
            return
        if kind == "acknowledge":
            self.actions.record(incident, "acknowledge", interaction.actor, now)
        elif kind == "mute":
            if incident.signature is None:
                raise HTTPException(status_code=400, detail="no root-cause signature to mute")
            self.actions.mute(incident, interaction.actor, now + timedelta(hours=interaction.hours or 1), now)
        elif kind == "not_the_cause":
            self.actions.record(incident, "not_the_cause", interaction.actor, now, interaction.note,
                                correct_rank=interaction.rank)
        elif kind == "resolve":
            note = interaction.note or f"resolved from Slack by {interaction.user_name or interaction.user_id}"
            done = self.actions.resolve(incident.id, interaction.actor, note, now,
                                        on_saved(lambda: now, collateral_ids(self.catalog)))
            incident = done[0] if done else incident
        self._show(incident.id, interaction)

    def _show(self, incident_id: str, interaction: Interaction) -> None:
        incident = self.store.incident(incident_id)
        if incident is None or not interaction.channel or not interaction.ts:
            return
        try:
            self.post.show(incident, self.actions.actions(incident_id), interaction.channel, interaction.ts)
        except FirstfaultError as exc:  # recorded already; the post catches up with the next revision
            log.warning("could not update the Slack post of %s: %s", incident_id, exc)


def slack_actions_router(handler: SlackActions) -> APIRouter:
    router = APIRouter()

    @router.post("/slack/actions", tags=["slack"], status_code=200,
                 responses={400: {"description": "not an interaction firstfault sent"},
                            401: {"description": "bad, stale (over 5 minutes) or replayed Slack signature"},
                            404: {"description": "no such incident"}})
    async def slack_interaction(request: Request) -> Response:
        """Slack's interactivity Request URL: the buttons and modals of the incident posts."""
        body = await request.body()
        now = clock_of(request)
        headers = {k.lower(): v for k, v in request.headers.items()}
        with answers():
            await run_in_threadpool(handler.verify, body, headers, now)
            try:
                interaction = parse(_payload(body))
            except BadInput as exc:  # shown under the modal's field; the modal stays open
                return JSONResponse({"response_action": "errors", "errors": {exc.block_id: str(exc)}})
            except BadPayload as exc:
                raise HTTPException(status_code=400, detail=str(exc)) from exc
            await run_in_threadpool(handler.handle, interaction, now)
        return Response(status_code=200)

    @router.get("/v1/incidents/{incident_id}/actions", tags=["history"], response_model=list[ActionOut])
    def incident_actions(incident_id: str) -> list[ActionOut]:
        """What people did to the incident from Slack, oldest first (a "not_the_cause" is a labelled example)."""
        with answers():
            return [_out(a) for a in handler.actions.actions(incident_id)]

    return router


def _payload(body: bytes) -> dict[str, Any]:
    try:
        form = parse_qs(body.decode(), strict_parsing=True)
        payload = json.loads(form["payload"][-1])
    except (UnicodeDecodeError, ValueError, KeyError) as exc:
        raise BadPayload("expected a form with a JSON payload field") from exc
    if not isinstance(payload, dict):
        raise BadPayload("payload is not an object")
    return payload


def _out(a: IncidentAction) -> ActionOut:
    return ActionOut(action=a.action, actor=a.actor, at=a.at, note=a.note, diagnosed_rank=a.diagnosed_rank,
                     diagnosed_signature=a.diagnosed_signature, correct_rank=a.correct_rank,
                     mute_until=a.mute_until)
