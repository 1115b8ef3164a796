"""Redact credentials found in log text before anything leaves firstfault (Slack, PagerDuty, webhooks). Pure.

Training logs print environment dumps, launcher command lines and tracebacks of HTTP clients; they carry Slack
and GitHub tokens, AWS keys, W&B and Hugging Face tokens, bearer headers, ``password=...`` and the odd private
key. Each pattern keeps what helps a reader (the key name, the token's kind) and replaces the secret itself.
"""

from __future__ import annotations

import re

from schemas.diagnosis import Diagnosis
from schemas.incident import Incident

MASK = "[REDACTED]"

# (name, pattern, replacement). Order matters: whole blocks and URLs first, generic key=value last.
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("private key", re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)",
                               re.DOTALL), f"-----BEGIN \\1PRIVATE KEY----- {MASK} -----END \\1PRIVATE KEY-----"),
    ("url credentials", re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/:@<>\"']+:[^\s/@<>\"']+@", re.IGNORECASE),
     f"\\1{MASK}@"),
    ("slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{8,}"), f"xox*-{MASK}"),
    ("slack webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"),
     f"https://hooks.slack.com/services/{MASK}"),
    ("github token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), f"gh*_{MASK}"),
    ("hugging face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}"), f"hf_{MASK}"),
    ("aws access key", re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA)[A-Z0-9]{16}\b"), f"AKIA{MASK}"),
    ("openai-style key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"), f"sk-{MASK}"),
    ("bearer", re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE), f"\\1 {MASK}"),
    ("key=value", re.compile(
        r"(?P<key>\b[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
        r"|authorization|credentials?|WANDB_API_KEY|HF_TOKEN)[\w.-]*)"
        r"(?P<sep>[\"']?\s*[:=]\s*[\"']?)(?![\d.]+\b|(?:Bearer|Basic|Token)\s)"  # numbers, bearer: not here
        r"(?P<value>[^\s\"',;}]{3,})", re.IGNORECASE), f"\\g<key>\\g<sep>{MASK}"),
    ("wandb key", re.compile(r"\b(wandb login\s+)[0-9a-f]{40}\b"), f"\\1{MASK}"),
)


def redact(text: str) -> str:
    """``text`` with every credential this module recognises replaced by ``[REDACTED]``."""
    for _name, pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def redact_incident(incident: Incident) -> Incident:
    """A copy whose log-derived text (evidence and its sources, explanation, host names, title, fix,
    verification, changes, and the same of each suspect) is redacted."""
    d = incident.diagnosis
    rc = d.root_cause
    if rc is not None:
        rc = rc.model_copy(update={
            "title": redact(rc.title), "host": redact(rc.host) if rc.host else rc.host,
            "explanation": [redact(e) for e in rc.explanation],
            "evidence": [ev.model_copy(update={"text": redact(ev.text), "source": redact(ev.source)})
                         for ev in rc.evidence],
        })
    diagnosis: Diagnosis = d.model_copy(update={
        "root_cause": rc,
        "collateral": [g.model_copy(update={"hosts": [redact(h) for h in g.hosts]}) for g in d.collateral],
        "fix": redact(d.fix) if d.fix else d.fix,
        "verification": redact(d.verification) if d.verification else d.verification,
        "suspects": [x.model_copy(update={
            "host": redact(x.host) if x.host else x.host, "reasons": [redact(r) for r in x.reasons],
            "evidence": [ev.model_copy(update={"text": redact(ev.text), "source": redact(ev.source)})
                         for ev in x.evidence]}) for x in d.suspects],
    })
    return incident.model_copy(update={"diagnosis": diagnosis, "changes": [redact(c) for c in incident.changes]})
