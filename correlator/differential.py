"""Unknown failures: error lines whose template shows on one rank or host and not the others.

A failure no one catalogued still gets a suspect and the lines to read: numbers, addresses and paths are masked
into templates, and templates unique to one speaker, earliest first, point at it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from correlator.reading import ContextRecord

_MASKS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?:<\d+>|:\d+)?"), "<ip>"),
    (re.compile(r"(?:/[\w.+-]+)+"), "<path>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
]
_PREFIX = re.compile(r"^(?:\[[^\]]{0,80}\]:?\s*|\S+:\d+:\d+ \[\d+\] |[IWEF]\d{4} [\d:.]+ \d+ \S+\] )+")


def template(text: str) -> str:
    body = _PREFIX.sub("", text.strip())
    for rx, mask in _MASKS:
        body = rx.sub(mask, body)
    return body[:200]


@dataclass(frozen=True)
class Suspect:
    rank: int | None
    host: str | None
    lines: list[ContextRecord]
    unique: bool  # its templates are seen on no other speaker


def differential(records: list[ContextRecord]) -> Suspect | None:
    errors = [r for r in records if r.kind == "errorish"]
    if not errors:
        return None
    speakers: dict[tuple[int | None, str | None], list[ContextRecord]] = defaultdict(list)
    seen_on: dict[str, set[tuple[int | None, str | None]]] = defaultdict(set)
    for rec in errors:
        key = (rec.who.rank, rec.who.host)
        speakers[key].append(rec)
        seen_on[template(rec.text)].add(key)
    best: tuple[tuple[int, int], tuple[int | None, str | None], list[ContextRecord]] | None = None
    for key, recs in speakers.items():
        unique = [r for r in recs if len(seen_on[template(r.text)]) == 1]
        rank_key = (len(unique), -min(r.line_no for r in recs))
        if best is None or rank_key > best[0]:
            best = (rank_key, key, unique or recs)
    assert best is not None
    (unique_count, _), (rank, host), lines = best
    alone = len(speakers) == 1
    return Suspect(rank, host, lines[:5], unique=unique_count > 0 and not alone)
