"""How a fix's verification reads in a Slack post: who ran what, when, the result and the output's end."""

from __future__ import annotations

from collections.abc import Callable

from schemas.incident import Incident
from schemas.verification import Verification

EXCERPT_CHARS = 600
CODE = "```"


def header_prefix(incident: Incident) -> str:
    v = incident.verification
    if incident.state == "resolved" and incident.regressed_by:
        return "Failed again after its fix: "
    if incident.state == "resolved":
        return "Verified: " if v and v.status == "passed" else "Resolved: "
    return "Verification failed, reopened: " if v and v.status == "failed" else ""


def verification_mrkdwn(v: Verification, escape: Callable[[str], str], code_safe: Callable[[str], str]) -> str:
    """``escape`` and ``code_safe`` are slack_message's (Slack's three control characters, a ``` inside code)."""
    mark = "✅ *Verified*" if v.status == "passed" else "❌ *Verification failed*"
    where = "reported" if v.reported else "ran"
    what = f" `{code_safe(v.command)}`" if v.command else ""
    lines = [f"{mark} by {escape(v.by)} at {v.at:%Y-%m-%d %H:%M}Z: {where}{what}",
             f"{escape(v.reason)}; pass means {escape(v.criterion)}"]
    if v.output_excerpt:
        tail = v.output_excerpt[-EXCERPT_CHARS:]
        lines.append(CODE + code_safe(tail) + CODE)
    return "\n".join(lines)
