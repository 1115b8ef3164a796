"""The title of a diagnosis whose cause no specific catalog entry names: the failing line's own words.

A fallback entry (``python.exception``, ``cuda.error_generic``, ``nccl.warn.generic``) or no entry at all says
only what kind of line failed; the line itself says what went wrong (``RuntimeError: Invalid mt19937 state``,
``zipfile.BadZipFile: File is not a zip file``). A Slack headline or an incident list that reads "Python exception
raised" sends every reader to the evidence; one that carries the message tells most of them what happened, the way
an error tracker titles an issue with its exception's type and value. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from catalog.model import Signature, compiled
from correlator.redact import redact
from schemas.diagnosis import Evidence

MESSAGE_CHARS = 100  # the title leads a Slack header (150 characters): the message, then what fits of the kind
UNRECOGNISED = "Unrecognised failure: read the lines below"  # the title when no line says anything either

# What launchers and loggers put before a process's own words: `[rank3]:`, `[default0]:`, `[1,3]<stderr>:`, srun
# -l's `3: `, NCCL's `host:pid:tid [dev] `, glog's `E1130 12:00:00.000 123 file.cc:45] `, ISO and syslog stamps.
_PREFIX = re.compile(
    r"^(?:\s*(?:\[[^\]]{0,80}\](?:<std(?:out|err)>)?:?|\d{1,6}:(?=\s)|\S+:\d+:\d+ \[\d+\]|"
    r"[IWEF]\d{4} [\d:.]+\s+\d+ \S+\]|\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?|"
    r"[A-Z][a-z]{2} [ \d]\d [\d:]{8})\s*)+")
# Python's last traceback line: `module.Type: message` or a bare `Type` (traceback.format_exception_only)
_EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?"
                        r"(?:Error|Exception|Failure|Fault|Exit|Interrupt|File|Timeout)|(?:[a-z_]\w*\.)+[A-Z]\w*)(?::\s*(.*))?$")
_LEAD = " \t:]>|-"  # what a fingerprint's prefix alternation may take of the text before the error
_NOT_A_MESSAGE = re.compile(r"^(?:Traceback \(most recent call last\):|File \"|\^+$|~+$|$)")


def own_words(text: str) -> str:
    """The line without what the launcher, the logger or NCCL put before it."""
    return _PREFIX.sub("", text).strip()


def message(evidence: Sequence[Evidence], sig: Signature | None = None) -> str | None:
    """What the failing lines say went wrong: the exception line of a traceback where there is one (with its
    message: a bare `Exception:` says less than the next line); else the first line from where ``sig``'s
    fingerprint matched it (whatever prefixes came before: a collector's date, mpirun's tag, NCCL's header); else
    the first line that is not a traceback's frame or header. None when no line says anything."""
    words = [own_words(e.text) for e in evidence]
    bare: str | None = None
    for text in words:
        m = _EXCEPTION.match(text)
        if m is None:
            continue
        if (m.group(2) or "").strip():
            return _cut(text)
        bare = bare or m.group(1)
    said = bare or _from_fingerprint(sig, evidence) or next((t for t in words if not _NOT_A_MESSAGE.match(t)), None)
    return _cut(said) if said else None


def _from_fingerprint(sig: Signature | None, evidence: Sequence[Evidence]) -> str | None:
    if sig is None:
        return None
    for e in evidence:
        for fp in sig.fingerprints:
            if (m := compiled(fp.regex).search(e.text)) is not None:
                said = e.text[m.start():].strip().lstrip(_LEAD).strip()
                if said:
                    return said
    return None


def headline(title: str, said: str | None) -> str:
    """The message first (a clipped header still says it), then ``title``: the entry's, or "Unrecognised failure"."""
    return f"{said} — {title.split(': read', 1)[0]}" if said else title


def _cut(text: str) -> str:
    """Redacted before the cut: a token cut in half no longer looks like one to the diagnosis' redaction."""
    text = redact(text[:MESSAGE_CHARS + 200])
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1].rstrip() + "…"
