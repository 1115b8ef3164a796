"""The Slack post of an incident, as Block Kit. Pure: no Slack client here, only the payload and its limits.

Slack's limits (and what happens past them): 50 blocks (``invalid_blocks``), header text 150 characters, section
text 3,000, section fields 10 of 2,000, and an undocumented ``msg_blocks_too_long`` at about 12-13k characters summed
over all blocks. We stay under 11,000 in all and cut long parts with "… N more lines". Log text is escaped (``&``,
``<``, ``>``) so a ``<!channel>``, ``<@U123>`` or ``<http://x|link>`` printed by a job is shown, never rendered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from notifiers.redact import redact_incident
from notifiers.verification_text import header_prefix, verification_mrkdwn
from schemas.incident import Incident
from schemas.text import collateral_where, suspect_line

Block = dict[str, Any]

MAX_BLOCKS = 50
HEADER_CHARS = 150
SECTION_CHARS = 3000
FIELD_CHARS = 2000
TOTAL_CHARS = 11_000  # under Slack's ~12k msg_blocks_too_long, with room for the fields and the context
TEXT_CHARS = 1_000  # the notification / fallback text
LINE_CHARS = 400  # one evidence line
PART_CHARS = 1_500  # why, collateral, fix: each
CODE = "```"


def escape(text: str) -> str:
    """Slack mrkdwn escaping: the only three characters Slack's parser treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _code_safe(text: str) -> str:
    # a literal ``` inside a log line would close our code block and let the rest render as mrkdwn
    return escape(text).replace(CODE, "``\u200b`")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fit_lines(lines: Sequence[str], limit: int) -> str:
    """As many whole lines as fit in ``limit`` characters, then "… N more lines"."""
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        rest = len(lines) - i - 1
        reserve = len(f"\n… {rest} more lines") if rest else 0
        if used + len(line) + 1 + reserve > limit:
            dropped = len(lines) - i
            suffix = f"… {dropped} more line{'s' if dropped != 1 else ''}"
            while kept and used + len(suffix) + 1 > limit:
                used -= len(kept.pop()) + 1
                dropped += 1
                suffix = f"… {dropped} more lines"
            return "\n".join([*kept, suffix])
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept)


def _emoji(incident: Incident) -> str:
    if incident.regressed_by:
        return "🔁"
    return "✅" if incident.state == "resolved" else "🔴"


def not_sure(incident: Incident) -> bool:
    """A `suspects` verdict, or an unrecognised failure under the line with its suspects listed (the diagnosis lists
    them only under it): the post says "Likely" and lists the suspects, never one rank as the initiator."""
    return incident.diagnosis.verdict == "suspects" or bool(incident.diagnosis.suspects)


def title_of(incident: Incident) -> str:
    rc = incident.diagnosis.root_cause
    title = rc.title if rc else "No known failure signature"
    return f"Likely: {title}" if not_sure(incident) else title


def initiator_of(incident: Incident) -> str:
    suspects = incident.diagnosis.suspects
    if not_sure(incident) and suspects:
        shown = ", ".join(suspect_line(s) for s in suspects[:3])
        more = f" and {len(suspects) - 3} more" if len(suspects) > 3 else ""
        return f"not sure, suspects: {shown}{more}"
    if incident.rank is not None and incident.host:
        return f"rank {incident.rank} on {incident.host}"
    if incident.rank is not None:
        return f"rank {incident.rank}"
    if incident.host:
        return f"host {incident.host}"
    return "job-wide (no single rank)"


def header_text(incident: Incident) -> str:
    prefix = header_prefix(incident)
    return clip(f"{_emoji(incident)} {prefix}{title_of(incident)} · job {incident.job_id}", HEADER_CHARS)


def fallback_text(incident: Incident, url: str) -> str:
    """The ``text`` of the message: notifications and clients without blocks show this."""
    incident = redact_incident(incident)
    line = f"{header_text(incident)}: {initiator_of(incident)}"
    return clip(escape(line), TEXT_CHARS - len(url) - 3) + f" <{url}>"


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, SECTION_CHARS)}}


def _fields(incident: Incident) -> Block:
    rc = incident.diagnosis.root_cause
    pairs = [("Suspects" if not_sure(incident) else "Initiating", initiator_of(incident)),
             ("Signature", f"`{rc.signature}`" if rc and rc.signature else "none (no catalog entry fits)"),
             ("Confidence", f"{rc.confidence:.0%}" if rc else "n/a"),
             ("Severity", incident.severity)]
    if incident.cluster:
        pairs.append(("Cluster", escape(incident.cluster)))
    if incident.team:
        pairs.append(("Team", escape(incident.team)))
    if rc and rc.time:
        pairs.append(("Time", rc.time.isoformat(timespec="seconds")))
    if incident.diagnosis.impact:
        pairs.append(("Cost", escape(incident.diagnosis.impact.summary())))
    if incident.repeats:
        pairs.append(("Repeats", f"{incident.repeats} earlier attempt(s) of this job failed the same way"))
    if incident.regression_of:
        pairs.append(("Regression", f"the same failure on this host as `{incident.regression_of}`, which was "
                                    "resolved: the fix did not hold"))
    if incident.regressed_by:
        pairs.append(("Failed again", f"`{incident.regressed_by}`: the same failure on this host after the fix"))
    if rc and rc.gpu:  # last: Slack shows 10 fields, and what failed matters more than the board's serial
        pairs.append(("GPU", escape(rc.gpu.label())))
    fields = [{"type": "mrkdwn", "text": clip(f"*{k}*\n{escape(v) if k in ('Initiating', 'Suspects') else v}",
                                              FIELD_CHARS)}
              for k, v in pairs[:10]]
    return {"type": "section", "fields": fields}


def _suspects(incident: Incident) -> str | None:
    """Each suspect of a `suspects` verdict with what points at it: the reader decides, we do not."""
    if not not_sure(incident) or not incident.diagnosis.suspects:
        return None
    lines = []
    for i, sus in enumerate(incident.diagnosis.suspects, 1):
        lines.append(clip(f"{i}. {escape(suspect_line(sus))}", LINE_CHARS))
        lines += [clip(f"    `{_code_safe(f'{ev.source}:{ev.line}  {ev.text}')}`", LINE_CHARS)
                  for ev in sus.evidence[:1]]
    return "*Not sure which: the suspects, likeliest first*\n" + fit_lines(lines, PART_CHARS)


def _why(incident: Incident) -> str | None:
    rc = incident.diagnosis.root_cause
    if not rc or not rc.explanation:
        return None
    return "*Why this one*\n" + fit_lines([f"• {escape(e)}" for e in rc.explanation], PART_CHARS)


def _collateral(incident: Incident) -> str | None:
    groups = incident.diagnosis.collateral
    if not groups:
        return None
    lines = []
    for g in groups:
        where = collateral_where(g, name=escape)
        lines.append(clip(f"{g.count}× `{escape(g.signature)}`  ({'; '.join(where)})", LINE_CHARS))
    return "*Collateral (consequences, not causes)*\n" + fit_lines(lines, PART_CHARS)


def _evidence(incident: Incident, limit: int) -> str | None:
    rc = incident.diagnosis.root_cause
    if not rc or not rc.evidence or limit < 100:
        return None
    lines = [clip(_code_safe(f"{ev.source}:{ev.line}  {ev.text}"), LINE_CHARS) for ev in rc.evidence]
    head = "*Evidence*\n"
    return head + CODE + fit_lines(lines, min(limit, SECTION_CHARS) - len(head) - 2 * len(CODE)) + CODE


def _block_chars(block: Block) -> int:
    if "text" in block:
        return len(block["text"]["text"])
    if "fields" in block:
        return sum(len(f["text"]) for f in block["fields"])
    return sum(len(e.get("text", "")) for e in block.get("elements", []))


def incident_blocks(incident: Incident, url: str) -> list[Block]:
    """The root message: the incident's current state (edited in place on every revision)."""
    incident = redact_incident(incident)
    d = incident.diagnosis
    blocks: list[Block] = [{"type": "header", "text": {"type": "plain_text", "text": header_text(incident),
                                                       "emoji": True}}, _fields(incident)]
    for part in (_suspects(incident), _why(incident), _collateral(incident)):
        if part:
            blocks.append(_section(part))
    if d.fix:
        blocks.append(_section("*Fix*\n" + clip(escape(d.fix), PART_CHARS)))
    if d.verification:
        blocks.append(_section("*Verify*\n" + CODE + clip(_code_safe(d.verification), PART_CHARS) + CODE))
    if incident.verification:
        blocks.append(_section(verification_mrkdwn(incident.verification, escape, _code_safe)))
    context = {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(
        f"<{url}|Open incident {incident.id}> · revision {incident.revision} · job {escape(incident.job_id)}"
        f" attempt {incident.attempt}", SECTION_CHARS)}]}
    used = sum(_block_chars(b) for b in blocks) + _block_chars(context)
    evidence = _evidence(incident, TOTAL_CHARS - used)
    if evidence:
        blocks.append(_section(evidence))
    blocks.append({"type": "divider"})
    blocks.append(context)
    return blocks[:MAX_BLOCKS]


def revision_reply(incident: Incident, url: str) -> tuple[str, list[Block]]:
    """The thread reply of a revision or resolution: what changed, and a link."""
    incident = redact_incident(incident)
    what = "Resolved" if incident.state == "resolved" else f"Revision {incident.revision}"
    changes = incident.changes or ["diagnosis updated"]
    body = f"*{what}*\n" + fit_lines([f"• {escape(c)}" for c in changes], PART_CHARS)
    now = f"Now: {escape(title_of(incident))}, {escape(initiator_of(incident))}"
    blocks: list[Block] = [_section(body), _section(clip(now, SECTION_CHARS)),
                           {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{url}|{incident.id}>"}]}]
    text = clip(f"{what}: " + escape("; ".join(changes)), TEXT_CHARS)
    return text, blocks
