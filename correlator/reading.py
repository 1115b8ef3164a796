"""Turning a stream of byte chunks from one source into findings and context records. Pure: no I/O here.

Chunks may split lines anywhere; a line longer than MAX_CARRY is matched in pieces rather than held whole, so
memory stays bounded whatever the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from catalog.matcher import LineMatch, Matcher
from catalog.model import Signature
from correlator.speakers import Who, read_prefixes, read_speaker
from correlator.structured import Sniffer, Structured
from correlator.templates import gravity, template
from correlator.timestamps import Stamp, parse_timestamp
from schemas.findings import Finding, Role, Speaker

MAX_CARRY = 1 << 20
SAID_MEMO = 4096  # distinct lines remembered per source
Said = tuple[Who, Stamp | None, str]  # who said a line, its time stamp, its text as records keep it
MAX_EVENT_GAP = 40  # lines between two matches of one traceback or multi-line message
_ROLE_RANK = {Role.INITIATING: 3, Role.EITHER: 2, Role.COLLATERAL: 1, Role.CONTEXT: 0}
_SEVERITY_RANK = {"critical": 3, "error": 2, "warning": 1, "info": 0}
_TRACEBACKISH = re.compile(
    r"^(?:\s|$|Traceback|File \"|During handling|The above exception|Last error|Exception raised from|"
    r"frame #|[\w.]+(?:Error|Exception)\b|\w+: |[-=*─│╭╰|]{2,}|\[\d+\]:|ERROR|\^)"
)
# Context kinds the correlator only folds into maps and sets (correlator/identity.py, prepare.mark_stale, the
# `logged` ranks of diagnose): first wins (setdefault), last wins (assignment, also when guarded by a running
# max), the largest line number, membership. Such a fold gives the same result over any subsequence that keeps,
# in order, the first and the last occurrence of every distinct (kind, fields, speaker) row; so a source keeps
# only those two of each, and NCCL's sub-communicator set-up, printed every few steps, stops growing memory.
# Not here: pg_status (clock medians), store_remote, worker_failed and table_* (line numbers and counts matter).
FOLDED_KINDS = frozenset({"nccl_comm", "nccl_busid", "nccl_ring", "nccl_using", "nccl_version", "worker_sigterm",
                          "k8s_node"})
# `errorish` lines are kept once per (speaker, template, gravity, catalogued): the differential view weighs each
# distinct template a speaker printed once, from its first occurrence, so the later repeats are only counted
# (ContextRecord.repeats). A source with more distinct error templates than this keeps its earliest ones.
MAX_ERROR_ROWS = 4096


@dataclass(frozen=True, slots=True)
class ContextRecord:
    kind: str
    fields: dict[str, Any]
    source: str
    line_no: int
    who: Who
    time: datetime | None
    text: str = ""
    repeats: int = 1  # for a folded errorish row: how many times its source printed it

    def __reduce__(self) -> tuple[type[ContextRecord], tuple[Any, ...]]:
        # Sent from pool workers by the thousand: plain arguments pickle faster than slot state.
        return (ContextRecord, (self.kind, self.fields, self.source, self.line_no, self.who, self.time, self.text,
                                self.repeats))


@dataclass
class SourceResult:
    source: str
    findings: list[Finding] = field(default_factory=list)
    context: list[ContextRecord] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    structured: list[Structured] = field(default_factory=list)  # a Flight Recorder dump or job metadata


class _KeptContext:
    """One source's context records in line order: a folded kind's row only at its first and last occurrence,
    an errorish row only at its first, with its repeat count."""

    def __init__(self, fold_errors: bool) -> None:
        self._fold_errors = fold_errors
        self._records: list[ContextRecord | None] = []  # None: a last occurrence that a later one replaced
        self._last_slot: dict[tuple[Any, ...], int] = {}  # row -> slot of its latest occurrence (-1: the first)
        self._holes = 0
        self._error_rows: dict[tuple[Any, ...], list[Any]] = {}  # row -> [its first record, times seen]
        self._shapes: dict[str, tuple[str, int]] = {}  # text -> (template, gravity); logs repeat lines verbatim
        self.errors_dropped = 0  # error lines of rows beyond MAX_ERROR_ROWS

    def add(self, record: ContextRecord, catalogued: bool = False) -> None:
        if record.kind == "errorish" and self._fold_errors:
            self._add_error(record, catalogued)
            return
        if record.kind in FOLDED_KINDS:
            row = (record.kind, tuple(sorted(record.fields.items())), record.who)
            slot = self._last_slot.get(row)
            if slot is not None and slot >= 0:
                self._records[slot] = None
                self._holes += 1
            self._last_slot[row] = -1 if slot is None else len(self._records)
        self._records.append(record)
        if self._holes > max(1024, len(self._records) // 2):
            self._compact()

    def _add_error(self, record: ContextRecord, catalogued: bool) -> None:
        shape = self._shapes.get(record.text)
        if shape is None:
            if len(self._shapes) >= SAID_MEMO:
                self._shapes.clear()
            shape = self._shapes[record.text] = (template(record.text), gravity(record.text))
        row = (record.who, *shape, catalogued)
        kept = self._error_rows.get(row)
        if kept is not None:
            kept[1] += 1
        elif len(self._error_rows) >= MAX_ERROR_ROWS:
            self.errors_dropped += 1
        else:
            self._error_rows[row] = [record, 1]
            self._records.append(record)

    def records(self) -> list[ContextRecord]:
        repeats = {id(first): seen for first, seen in self._error_rows.values() if seen > 1}
        return [r if id(r) not in repeats else replace(r, repeats=repeats[id(r)])
                for r in self._records if r is not None]

    def _compact(self) -> None:
        moved: dict[int, int] = {}
        kept: list[ContextRecord | None] = []
        for old, record in enumerate(self._records):
            if record is not None:
                moved[old] = len(kept)
                kept.append(record)
        self._records = kept
        self._last_slot = {row: slot if slot < 0 else moved[slot] for row, slot in self._last_slot.items()}
        self._holes = 0


def _read_who(line: str, base: Who, owner: str | None) -> Who:
    who = read_speaker(line, base)
    if who == base and owner is not None:
        who = read_speaker(owner, base)
    return who


def _read_stamp(line: str, year: int) -> Stamp | None:
    _, body = read_prefixes(line, Who())
    stamp = parse_timestamp(body, year)
    if stamp is None and body is not line and len(body) != len(line):
        stamp = parse_timestamp(line, year)
    return stamp


def _owner_line(buffer: bytes, start: int) -> str | None:
    """For an indented continuation line, the nearest earlier line that starts a message (within 64 lines)."""
    pos = start
    for _ in range(64):
        if pos <= 0:
            return None
        prev = buffer.rfind(b"\n", 0, pos - 1) + 1
        line = buffer[prev : pos - 1]
        if line and not line[:1].isspace():
            return line[:400].decode("utf-8", errors="replace")
        pos = prev
    return None


class SourceScanner:
    """Feed chunks of one source in order; ``finish()`` returns what was found.

    With ``fold_context``, for a diagnosis, repeats are kept once: an errorish line per (speaker, template,
    gravity, catalogued), with its count (see MAX_ERROR_ROWS); a context-role finding that makes an event of its
    own (nothing before or after it joined it), per (signature, speaker, template). The correlator weighs each
    error template once and drops such events, so the diagnosis is the same (tested against an unfolded scan),
    and a warning printed every step no longer grows memory. ``firstfault match`` keeps every finding.
    """

    def __init__(self, matcher: Matcher, source: str, base: Who, year: int, order_base: int = 0,
                 fold_context: bool = False) -> None:
        self._matcher = matcher
        self._base = base
        self._year = year
        self._carry = b""
        self._line_no = 1  # number of the first line in the next buffer
        self._order = order_base
        self._last_event: tuple[int, Who] | None = None  # (line_no, who) of the last finding
        self._event_start = 0
        # Logs repeat lines verbatim (the same warning every step): a distinct line's speaker and time are read
        # once, and its records share one copy of its text.
        self._said: dict[tuple[str, str | None], Said] = {}
        self.result = SourceResult(source)
        self._context = _KeptContext(fold_context)
        self._structured = Sniffer(source, base.rank)
        self._fold_context = fold_context
        self._context_rows: set[tuple[Any, ...]] = set()  # context-role rows seen in this source
        self._templates: dict[str, str] = {}
        self._pending: Finding | None = None  # a repeated context-role finding, kept if the next one joins it

    def feed(self, chunk: bytes) -> None:
        self.result.bytes += len(chunk)
        self._structured.feed(chunk)
        data = self._carry + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) > MAX_CARRY:  # one enormous line: match this piece, keep going on the same line
                self._process(data, advance=False)
                data = b""
            self._carry = data
            return
        self._carry = data[cut + 1 :]
        self._process(data[: cut + 1], advance=True)

    def finish(self) -> SourceResult:
        if self._carry:
            self._process(self._carry, advance=True)
            self._carry = b""
        if self._pending is not None:  # the next shard's first finding may continue its event: keep it
            self.result.findings.append(self._pending)
            self._pending = None
        if found := self._structured.finish():
            self.result.structured.append(found)
        self.result.context = self._context.records()
        return self.result

    def _process(self, buffer: bytes, advance: bool) -> None:
        counted_to = 0
        line_no = self._line_no
        for lm in self._matcher.match(buffer):
            line_no += buffer.count(b"\n", counted_to, lm.start)
            counted_to = lm.start
            self._record(buffer, lm, line_no)
        if advance:  # count only the newlines after the last match: the ones before it are counted above
            line_no += buffer.count(b"\n", counted_to)
            self._line_no = line_no + (0 if buffer.endswith(b"\n") else 1)
            self.result.lines = self._line_no - 1

    def _record(self, buffer: bytes, lm: LineMatch, line_no: int) -> None:
        # An indented line may be a continuation: who said it may be on the line that started the message.
        owner = _owner_line(buffer, lm.start) if lm.text[:1].isspace() else None
        who, stamp, text = self._said_for(lm.text, owner)
        if lm.context:
            time = stamp.time if stamp else None
            catalogued = lm.signature is not None and not lm.signature.generic
            for kind, captures in lm.context.items():
                self._context.add(ContextRecord(kind, captures, self.result.source, line_no, who, time, text),
                                  catalogued)
        if lm.signature is None:
            return
        sig = lm.signature
        if self._continues_event(buffer, lm, line_no, who):
            event = self._event_start
        else:
            event = self._event_start = line_no
        self._last_event = (line_no, who)
        self._order += 1
        self._keep(
            Finding(
                signature=sig.id,
                generic=sig.generic,
                role=sig.role,
                source=self.result.source,
                line_no=line_no,
                text=lm.text.strip(),
                speaker=Speaker(rank=who.rank, host=who.host, pid=who.pid, device=who.device),
                time=stamp.time if stamp else None,
                clock=stamp.clock if stamp else None,
                fields=dict(lm.fields),
                order=self._order,
                event=event,
            )
        )

    def _keep(self, finding: Finding) -> None:
        pending, self._pending = self._pending, None
        if pending is not None and finding.event == pending.event:
            self.result.findings.append(pending)  # it began a traceback or message after all
        if self._fold_context and finding.role is Role.CONTEXT and finding.event == finding.line_no:
            by = finding.speaker
            row = (finding.signature, by.rank, by.host, by.pid, by.device, self._template(finding.text))
            if row in self._context_rows:
                self._pending = finding
                return
            if len(self._context_rows) < SAID_MEMO:
                self._context_rows.add(row)
        self.result.findings.append(finding)

    def _template(self, text: str) -> str:
        known = self._templates.get(text)
        if known is None:
            if len(self._templates) >= SAID_MEMO:
                self._templates.clear()
            known = self._templates[text] = template(text)
        return known

    def _said_for(self, line: str, owner: str | None) -> Said:
        """Who said ``line``, when, and its text as records keep it."""
        key = (line, owner)
        known = self._said.get(key)
        if known is None:
            if len(self._said) >= SAID_MEMO:
                self._said.clear()
            known = self._said[key] = (_read_who(line, self._base, owner), _read_stamp(line, self._year),
                                       line.strip()[:500])
        return known

    def _continues_event(self, buffer: bytes, lm: LineMatch, line_no: int, who: Who) -> bool:
        if self._last_event is None:
            return False
        last_line, last_who = self._last_event
        gap = line_no - last_line
        if gap <= 0 or gap > MAX_EVENT_GAP or last_who != who:
            return False
        if gap == 1:
            return True
        # Every line in between must read as part of a traceback or a multi-line message.
        pos = lm.start
        for _ in range(gap - 1):
            prev = buffer.rfind(b"\n", 0, pos - 1) + 1 if pos > 0 else 0
            if prev >= pos:
                return False  # the gap crosses a chunk boundary: do not guess
            between = buffer[prev : pos - 1].decode("utf-8", errors="replace")
            _, rest = read_prefixes(between, Who())
            if not _TRACEBACKISH.match(rest):
                return False
            pos = prev
        return True


def event_rank(finding: Finding, sig: Signature) -> tuple[int, int, int, int]:
    """Order findings inside one event: specific over generic, causes over wrappers and victims, severe first."""
    return (0 if finding.generic else 1, 0 if sig.wrapper else 1, _ROLE_RANK[finding.role],
            _SEVERITY_RANK.get(sig.severity.value, 0))
