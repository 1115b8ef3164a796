"""The title of a catch-all answer quotes what its line said. Pure.

A catch-all entry (`python.exception`, `cuda.error_generic`, NCCL's `Cuda failure '<text>'`) knows the kind of
line, not the error: "Python exception raised" does not say that the rank raised `RuntimeError: Invalid mt19937
state`. The error is in the line, after where the entry's fingerprint matched (the rank, time and host prefixes
come before it). An entry marked `quotes` in the catalog gets that text in the report's title, so that the one
line a person reads first names the error, as the line itself does; the signature, the rank and the confidence
are the same as without it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from catalog.model import Signature
from correlator.redact import redact

QUOTE_CHARS = 100  # the title leads a Slack header (150 characters): the quote, then as much of the title as fits
_LEAD = " \t:]>|-"  # what a fingerprint's prefix alternation may take of the text before the error


@lru_cache(maxsize=256)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.ASCII)


def quoted(sig: Signature, text: str) -> str | None:
    """The error ``text`` (a line ``sig`` matched) names, from where the first matching fingerprint starts."""
    for fp in sig.fingerprints:
        if (m := _compiled(fp.regex).search(text)) is not None:
            said = text[m.start():].strip().lstrip(_LEAD).strip()
            if said:  # redacted before the cut: a token cut in half no longer looks like one, and would leak
                said = redact(said[:QUOTE_CHARS + 200])
                return said if len(said) <= QUOTE_CHARS else said[:QUOTE_CHARS - 1].rstrip() + "…"
    return None


def title_of(sig: Signature, text: str | None) -> str:
    """``sig``'s title, led by what the line said where the entry is a catch-all that quotes it."""
    said = quoted(sig, text) if sig.quotes and text else None
    return sig.title if said is None else f"{said} — {sig.title}"
