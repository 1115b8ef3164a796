"""Redact credentials found in log text: applied once to every diagnosis as it is made (``diagnose``). Pure.

Training logs print environment dumps, launcher command lines and tracebacks of HTTP clients; they carry Slack
and GitHub tokens, AWS keys, W&B and Hugging Face tokens, bearer headers, ``password=...`` and the odd private
key. Each pattern keeps what helps a reader (the key name, the token's kind) and replaces the secret itself.
The rules, and what they cannot see, are in docs/redaction.md.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel

MASK = "[REDACTED]"
M = TypeVar("M", bound=BaseModel)

# Words that make the value after them a secret: `password=...`, `"api_key": "..."`, `--auth-token ...`.
_KEYWORDS = (r"password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|authorization"
             r"|credentials?|wandb[_-]?key|WANDB_API_KEY|HF_TOKEN")
_KEY_VALUE = re.compile(
    rf"(?P<key>\b[\w.-]{{0,64}}(?:{_KEYWORDS})[\w.-]{{0,64}})(?P<sep>[\"']?\s*[:=]\s*)"
    r"(?![\"']?(?:Bearer|Basic|Token)\s)"  # the bearer rule has already masked what follows
    # a quoted value is masked whole (it may hold spaces); a bare one up to a separator
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]+)(?P=quote)|(?P<bare>[^\s\"',;}]{3,}))",
    re.IGNORECASE)
# `--password hunter2`, `--hf-token hf_...`: a command-line option whose name says secret, its value after a space
_OPTION = re.compile(rf"(?P<opt>(?<![\w-])--?[\w-]{{0,64}}(?:{_KEYWORDS})[\w-]{{0,64}})(?P<sp>\s+)"
                     r"(?P<value>(?!-)[^\s\"']+)", re.IGNORECASE)  # not the next option


# A number after a word about tokens counts them (max_tokens=4096, tokens_per_sec: 15321.5, --num-tokens 12): not
# a secret. After any other keyword (a password, a secret, an API key) a number is masked like anything else.
_NUMBER = re.compile(r"[\d.]+")
_TOKEN_WORD = re.compile(r"tokens?", re.IGNORECASE)
_OTHER_KEYWORD = re.compile(_KEYWORDS, re.IGNORECASE)


def _counts(key: str, value: str) -> bool:
    return bool(_NUMBER.fullmatch(value) and _TOKEN_WORD.search(key)
                and not _OTHER_KEYWORD.search(_TOKEN_WORD.sub("", key)))


def _option(m: re.Match[str]) -> str:
    return m[0] if _counts(m["opt"], m["value"]) else f"{m['opt']}{m['sp']}{MASK}"


def _key_value(m: re.Match[str]) -> str:
    if m["bare"] and _counts(m["key"], m["bare"]):
        return m[0]
    if m["quote"]:
        return f"{m['key']}{m['sep']}{m['quote']}{MASK}{m['quote']}"
    return f"{m['key']}{m['sep']}{MASK}"


# (name, pattern, replacement). Order matters: whole blocks and URLs first, generic key=value last.
_RULES: tuple[tuple[str, re.Pattern[str], Any], ...] = (
    ("private key", re.compile(r"-----BEGIN ([A-Z0-9 ]{0,20})PRIVATE KEY-----"
                               r"(?:.{0,20000}?-----END \1PRIVATE KEY-----|.{0,20000})", re.DOTALL),
     f"-----BEGIN \\1PRIVATE KEY----- {MASK} -----END \\1PRIVATE KEY-----"),
    # user:password@ — the password may itself hold '@' (greedy up to the last '@' before the host's '/')
    ("url credentials", re.compile(r"\b([a-z][a-z0-9+.-]{0,30}://)[^\s/:@<>\"']{1,256}:[^\s/<>\"']{1,256}@",
                                   re.IGNORECASE),
     f"\\1{MASK}@"),
    ("slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{8,}"), f"xox*-{MASK}"),
    ("slack webhook", re.compile(r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]+"),
     f"\\1{MASK}"),
    ("github token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), f"gh*_{MASK}"),
    ("hugging face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}"), f"hf_{MASK}"),
    ("aws access key", re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA)[A-Z0-9]{16}\b"), f"AKIA{MASK}"),
    ("openai-style key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"), f"sk-{MASK}"),
    ("bearer", re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE), f"\\1 {MASK}"),
    ("key=value", _KEY_VALUE, _key_value),
    ("secret option", _OPTION, _option),
    # W&B's key is 40 hex digits: `wandb login KEY`, `wandb.login(key="KEY")`, and a .netrc's `password KEY`
    ("wandb key", re.compile(r"(\bwandb login\s+(?:--relogin\s+)?|\bkey\s*=\s*[\"']?|\bpassword\s+)[0-9a-f]{40}\b"),
     f"\\1{MASK}"),
)


# Words every rule above needs (a superset: they may let through text no rule changes). Most log lines hold none,
# and a few substring scans of the lower-cased text then replace twelve substitutions (a regex alternation of
# these words is ~50x slower). tests/unit/test_redact.py checks that the screen never changes an answer.
_SCREEN = ("-----begin", "://", "xox", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "hf_", "akia", "asia",
           "aroa", "aida", "sk-", "bearer", "basic", "token", "passw", "pwd", "secret", "key", "authorization",
           "credential")
# Quantifiers above are capped ({0,64} for a key's name, {1,256} for URL credentials, 20,000 for a key block): a
# 1 MiB line of "a.a.a.a..." made the uncapped ones backtrack quadratically.


def redact(text: str) -> str:
    """``text`` with every credential this module recognises replaced by ``[REDACTED]``. Idempotent."""
    lowered = text.lower()
    if not any(word in lowered for word in _SCREEN):
        return text
    for _name, pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def _clean(value: Any) -> Any:
    """``value`` redacted; the very same object when nothing in it changed (no copy of a clean diagnosis)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, BaseModel):
        return redact_model(value)
    if isinstance(value, list):
        if not value or isinstance(value[0], int | float):  # a model's lists are of one type: ranks, counts
            return value
        cleaned = [_clean(v) for v in value]
        return value if all(c is v for c, v in zip(cleaned, value, strict=True)) else cleaned
    if isinstance(value, dict):
        cleaned_d = {k: _clean(v) for k, v in value.items()}
        return value if all(cleaned_d[k] is v for k, v in value.items()) else cleaned_d
    return value


def redact_model(model: M) -> M:
    """``model`` with every string in it, at any depth, redacted: a copy, or ``model`` itself when it holds no
    secret. Every field, not a list of them: a field added later (a host, a reason, a source) is covered without
    anyone remembering to. ``model_copy`` keeps private attributes (a diagnosis's calibration features)."""
    update = {}
    for name in type(model).model_fields:
        old = getattr(model, name)
        new = _clean(old)
        if new is not old:
            update[name] = new
    return model.model_copy(update=update) if update else model


EVIDENCE_CHARS = 1000  # of one evidence line


def evidence_text(text: str) -> str:
    """A log line as evidence: its first EVIDENCE_CHARS, redacted before the cut (a token cut in half no longer
    looks like a token, and would leak). The 200 characters past the cut are enough for any rule to see a token
    that starts before it, and bound what redaction reads of a 1 MiB line."""
    return redact(text[:EVIDENCE_CHARS + 200])[:EVIDENCE_CHARS]
