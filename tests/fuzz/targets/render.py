"""Fuzz target: an incident decoded from the input (the JSON the store and the API hold, validated by the
Incident model: what fails validation is no incident and not a rendering input) rendered as the Slack post, its
revision reply, the PagerDuty event, the Markdown and (bit 0x10 of the first byte, unscaled) the terminal report.
The first byte's low bits scale it up (lists repeated, the long texts repeated) past Slack's limits, which a JSON
edit of a few bytes never reaches.

Property: no exception, and the payloads stay inside what the APIs accept (the stand-ins' validators: Slack's
blocks via check_blocks, PagerDuty's event checks and 512 KB), as tests/notifiers/test_render_fuzz.py states.
"""

from __future__ import annotations

import io
import json
from typing import Any

from pydantic import ValidationError
from rich.console import Console

from firstfault.render import render_markdown, render_text
from notifiers.pagerduty import build_event
from notifiers.slack_message import fallback_text, incident_blocks, revision_reply
from schemas.diagnosis import Diagnosis
from schemas.incident import Incident
from tests.notifiers.test_render_fuzz import ROUTING_KEY, URL, assert_slack_accepts, check_pagerduty_accepts

LIST_REPEATS = (1, 3, 20, 120)  # past Slack's 50 blocks and 10 fields whatever the incident held
TEXT_REPEATS = (1, 2, 40, 400)  # a 60-character title past the 3,000 of a section


def _scaled(d: Diagnosis, lists: int, texts: int) -> Diagnosis:
    update: dict[str, Any] = {"suspects": d.suspects * lists, "collateral": d.collateral * lists,
                              "timeline": d.timeline * lists, "alternatives": d.alternatives * lists,
                              "fix": d.fix and d.fix * texts, "verification": d.verification and d.verification * texts}
    if d.root_cause is not None:
        rc = d.root_cause
        update["root_cause"] = rc.model_copy(update={
            "title": rc.title * texts, "evidence": rc.evidence * lists, "explanation": rc.explanation * lists})
    return d.model_copy(update=update)


def incident_of(data: bytes) -> Incident | None:
    """The incident an input stands for, or None for bytes that are no incident."""
    head, body = (data[0], data[1:]) if data else (0, b"")
    try:
        incident = Incident.model_validate_json(body)
    except (ValidationError, ValueError):
        return None
    lists, texts = LIST_REPEATS[head & 3], TEXT_REPEATS[head >> 2 & 3]
    if lists == texts == 1:
        return incident
    diagnosis = _scaled(incident.diagnosis, lists, texts)
    return incident.model_copy(update={"diagnosis": diagnosis, "changes": incident.changes * lists})


def check(data: bytes) -> None:
    head = data[0] if data else 0
    incident = incident_of(data)
    if incident is None:
        return
    assert_slack_accepts(incident_blocks(incident, URL), fallback_text(incident, URL))
    text, blocks = revision_reply(incident, URL)
    assert_slack_accepts(blocks, text)
    check_pagerduty_accepts(build_event(incident, ROUTING_KEY, URL))
    out = render_markdown(incident.diagnosis)
    assert out.endswith("\n"), "Markdown not ended by a newline"
    json.dumps(incident.model_dump(mode="json"))
    if head & 0x1F == 0x10:  # unscaled, and asked for: rich costs 6 ms an incident (100 ms for 400 suspects)
        render_text(incident.diagnosis, Console(file=io.StringIO(), width=100, color_system=None))

