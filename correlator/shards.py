"""Log shards as the pipeline keeps them: one scanned piece of one source, merged back in order to diagnose. Pure.

A worker scans each shard on its own (line numbers start at 1 in every shard) and stores the findings and context
records as JSON; the correlator merges a source's shards by seq, shifting line numbers by the lines of the shards
before it, so evidence cites the line a user finds in the original file.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from correlator.continuation import MAX_EVENT_GAP
from correlator.kept import GROUPED_KINDS, ContextRecord
from correlator.reading import SourceResult
from correlator.speakers import Who, who_from_path
from schemas.findings import Finding, finding_from_json, finding_json


@dataclass(frozen=True)
class SourceKey:
    """One source of a job: its stream, who wrote it and its name. Shards of one source share a key."""

    stream: str
    rank: int | None
    host: str | None
    name: str

    @property
    def token(self) -> str:
        """A stable string for idempotency keys and database columns."""
        who = f"r{self.rank}" if self.rank is not None else f"h{self.host}" if self.host else "-"
        return f"{self.stream}|{who}|{self.name}"


def source_key(stream: str, rank: int | None, host: str | None, source: str | None) -> SourceKey:
    if source:
        name = source
    elif rank is not None:
        name = f"rank{rank}/{stream}"
    elif host:
        name = f"{host}/{stream}"
    else:
        name = stream
    return SourceKey(stream, rank, host, name)


def base_who(key: SourceKey) -> Who:
    """Who wrote a source: the shard's own rank/host, else what its name says."""
    named = who_from_path(key.name)
    return Who(rank=key.rank if key.rank is not None else named.rank, host=key.host or named.host)


def result_to_json(result: SourceResult) -> dict[str, Any]:
    return {
        "lines": result.lines,
        "bytes": result.bytes,
        "findings": [finding_json(f) for f in result.findings],
        "context": [_context_json(c) for c in result.context],
    }


class ScanJSON(Mapping[str, Any]):
    """result_to_json's dict as its JSON text, made where the scan ran: the store writes the text as it is
    (store/db.py's serializer), so a scan process's JSON is neither pickled as a dict nor encoded again by the
    thread that stores it; a reader that asks for more than its counts decodes it, once."""

    __slots__ = ("_bytes", "_decoded", "_lines", "text")

    def __init__(self, text: str, lines: int, size: int) -> None:
        self.text, self._lines, self._bytes = text, lines, size
        self._decoded: dict[str, Any] | None = None

    @classmethod
    def of(cls, result: SourceResult) -> ScanJSON:
        return cls(json.dumps(result_to_json(result)), result.lines, result.bytes)

    def __reduce__(self) -> tuple[type[ScanJSON], tuple[str, int, int]]:
        return ScanJSON, (self.text, self._lines, self._bytes)

    def __getitem__(self, key: str) -> Any:
        if key == "lines":
            return self._lines
        if key == "bytes":
            return self._bytes
        return self._dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())

    def _dict(self) -> dict[str, Any]:
        if self._decoded is None:
            self._decoded = json.loads(self.text)
        return self._decoded


def _context_json(record: ContextRecord) -> dict[str, Any]:
    # by hand, not dataclasses.asdict: that deep-copies every value, and a 1,024-rank job stores 14,000 of these
    who = record.who
    return {"kind": record.kind, "fields": dict(record.fields), "source": record.source, "line_no": record.line_no,
            "who": who._asdict(),
            "time": record.time.isoformat() if record.time else None, "text": record.text,
            "repeats": record.repeats}


def _context_from(row: Mapping[str, Any], source: str, offset: int) -> ContextRecord:
    """A stored context record, in the merged source and its line numbers."""
    data = dict(row)
    data["who"] = Who(**data["who"])
    data["time"] = datetime.fromisoformat(data["time"]) if data.get("time") else None
    data["source"], data["line_no"] = source, data["line_no"] + offset
    name = GROUPED_KINDS.get(data["kind"])
    if name is not None and isinstance(data["fields"].get(name + "s"), list):  # a run's values: JSON has no tuple
        data["fields"] = {**data["fields"], name + "s": tuple(data["fields"][name + "s"])}
    return ContextRecord(**data)


@dataclass(frozen=True)
class StoredShard:
    key: SourceKey
    seq: int
    eof: bool
    # result_to_json of this shard alone, or the SourceResult it was made from (a scan this process kept: the
    # same values without the JSON read back; merge then shares its records and findings, setting their order)
    scanned: Mapping[str, Any] | SourceResult


def listing_order(key: SourceKey) -> tuple[tuple[tuple[int, str], ...], str]:
    """Where `diagnose DIR` reads a source among the others: the order sources.files.expand lists a directory
    (os.walk's: a folder's files in name order, then its folders', depth first), the name being the path that
    `firstfault ship DIR` sent. Sources are merged in this order so that a job's findings are numbered as the CLI
    numbers them: ties in time (a timeline's, a tie-break's) then fall the same way, and the incident is the
    CLI's diagnosis. The token breaks ties between sources of one name (another stream or writer)."""
    parts = key.name.split("/")
    return (*((1, part) for part in parts[:-1]), (0, parts[-1])), key.token


def merge(shards: Iterable[StoredShard]) -> list[SourceResult]:
    """Every source's shards in seq order, as the SourceResults one pass over the whole file would give, the
    sources in the order `diagnose` lists them (listing_order)."""
    by_source: dict[SourceKey, list[StoredShard]] = defaultdict(list)
    for shard in shards:
        by_source[shard.key].append(shard)
    results = []
    for index, key in enumerate(sorted(by_source, key=listing_order)):
        results.append(_merge_source(key, sorted(by_source[key], key=lambda s: s.seq), index << 32))
    return results


def _merge_source(key: SourceKey, shards: Sequence[StoredShard], order_base: int) -> SourceResult:
    merged = SourceResult(key.name)
    offset = 0
    order = order_base
    for shard in shards:
        scanned = shard.scanned
        if isinstance(scanned, SourceResult):
            order = _merge_kept(merged, key.name, scanned, offset, order)
            offset += scanned.lines
            merged.bytes += scanned.bytes
            continue
        first = finding_from_json(scanned["findings"][0]) if scanned["findings"] else None
        joined = _joined_event(merged.findings, first, offset)
        for row in scanned["findings"]:
            order += 1
            event = row.get("event", 0)
            if joined is not None and event == joined[0]:
                event = joined[1]
            else:
                event += offset
            # shifted as JSON, then validated once (not a Finding made, then copied with dataclasses.replace)
            merged.findings.append(finding_from_json({**row, "source": key.name, "line_no": row["line_no"] + offset,
                                                      "event": event, "order": order}))
        for row in scanned["context"]:
            merged.context.append(_context_from(row, key.name, offset))
        offset += int(scanned["lines"])
        merged.bytes += int(scanned["bytes"])
    merged.lines = offset
    return merged


def _merge_kept(merged: SourceResult, name: str, part: SourceResult, offset: int, order: int) -> int:
    """One kept scan into `merged`, as its JSON would go: a finding or record already in place (the source's
    first shard, scanned under the source's name) is shared, its order set (the scan's own objects, which nothing
    else holds); others are shifted copies."""
    joined = _joined_event(merged.findings, part.findings[0] if part.findings else None, offset)
    for finding in part.findings:
        order += 1
        event = joined[1] if joined is not None and finding.event == joined[0] else finding.event + offset
        if offset == 0 and finding.source == name and event == finding.event:
            finding.order = order
            merged.findings.append(finding)
        else:
            merged.findings.append(replace(finding, source=name, line_no=finding.line_no + offset, event=event,
                                           order=order))
    if offset == 0 and all(rec.source == name for rec in part.context):
        merged.context.extend(part.context)
    else:
        merged.context.extend(rec._replace(source=name, line_no=rec.line_no + offset) for rec in part.context)
    return order


def _joined_event(before: Sequence[Finding], first: Finding | None, offset: int) -> tuple[int, int] | None:
    """A traceback cut by a shard boundary is one event, as it is in one pass over the file: when the shard's
    first finding is near its start and the last finding before it is by the same speaker near the boundary,
    the shard's first event continues that one. Returns (local event id, merged event id)."""
    if not before or first is None:
        return None
    last = before[-1]
    near = (offset - last.line_no) + first.line_no <= MAX_EVENT_GAP
    if near and first.event == first.line_no and first.speaker == last.speaker:
        return first.event, last.event
    return None


def complete_sources(shards: Iterable[StoredShard]) -> set[SourceKey]:
    """Sources whose eof shard arrived and every seq before it too."""
    seqs: dict[SourceKey, set[int]] = defaultdict(set)
    last: dict[SourceKey, int] = {}
    for shard in shards:
        seqs[shard.key].add(shard.seq)
        if shard.eof:
            last[shard.key] = shard.seq
    # every seq 0..end arrived, counted over the seqs received (an eof shard's seq sizes nothing)
    return {key for key, end in last.items() if sum(1 for seq in seqs[key] if 0 <= seq <= end) == end + 1}
