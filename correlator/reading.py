"""Turning a stream of byte chunks from one source into findings and context records. Pure: no I/O here.

Chunks may split lines anywhere; a line longer than MAX_CARRY is matched in pieces rather than held whole, so
memory stays bounded whatever the input.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC
from operator import itemgetter
from typing import Any

from catalog.lines import newline_counter
from catalog.matcher import MAX_LINE_CHARS, LineMatch, Matcher, Memo, line_text
from catalog.native import linescan, needs_setup
from catalog.native_state import PlanState
from correlator import kept as kept_module  # its FOLDED_KINDS read per scanner, as fold_row reads it
from correlator.continuation import MAX_EVENT_GAP, lines_between_continue
from correlator.held import SAID_MEMO, HeldFindings, SignatureLine
from correlator.hydra_labels import hydra_labelled, labelled_record
from correlator.kept import ContextRecord, KeptContext, Row, fold_row, line_keeper
from correlator.speakers import PDSH_NOT_HOST, Who, read_speaker, speaker_and_body
from correlator.structured import Sniffer, Structured
from correlator.templates import shape
from correlator.timestamps import STAMP_MEMO, Stamp, glog_stamps, parse_timestamp
from schemas.findings import Finding

MAX_CARRY = 1 << 20
_latest_start = itemgetter(3)  # of an inert entry: see SourceScanner._inert
# srun -l right-aligns task ids to the widest (" 1: " beside "12: "): such a line is labelled, not indented, and
# the line above it is another task's, not the start of its message.
_SRUN_PADDED = re.compile(r" +\d{1,5}: ")


@dataclass(slots=True)  # one a file, 163,840 files at 131,072 ranks: no dict each (issue 23)
class SourceResult:
    source: str
    findings: list[Finding] = field(default_factory=list)
    context: list[ContextRecord] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    # a Flight Recorder dump or job metadata; most sources have none, and share one empty tuple (issue 23)
    structured: Sequence[Structured] = ()


def _python_who_and_stamp(line: str, base: Who, owner: str | None, year: int) -> tuple[Who, Stamp | None]:
    """Who said ``line`` (else the line that began its message, ``owner``) and its time stamp, read after the
    launcher prefixes (else anywhere in its head)."""
    who, body = speaker_and_body(line, base)
    if owner is not None and who == base:
        who = read_speaker(owner, base)
    stamp = parse_timestamp(body, year)
    if stamp is None and body is not line and len(body) != len(line):
        stamp = parse_timestamp(line, year)
    return who, stamp


# The C speaker and time-stamp reading (catalog/_linescan_who.h) builds these types itself.
needs_setup(lambda module: module.configure_who(who_type=Who, stamp_type=Stamp, utc=UTC, not_hosts=PDSH_NOT_HOST,
                                                glog_memo=glog_stamps, memo_max=STAMP_MEMO))


def _errorish_folded(captures: dict[str, Any], who: Who, text: str, catalogued: bool
                     ) -> tuple[str, dict[str, Any], Row | None]:
    """An error line's context record (kind, fields, fold row) in a folding scan. Folded, its fields carry its
    template and gravity, which its row needs anyway: the differential view then reads them instead of masking
    the text again (in the pool's workers, not in the parent)."""
    masked, grave = shape(text)
    fields = {**captures, "template": masked, "gravity": grave}
    return "errorish", fields, ("errorish", who, masked, grave, catalogued)


def _errorish_whole(captures: dict[str, Any], who: Who, text: str, catalogued: bool
                    ) -> tuple[str, dict[str, Any], Row | None]:
    """An error line's context record in a scan that keeps every record: no row."""
    return "errorish", captures, None


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
    own (nothing before or after it joined it), per (signature, speaker, template): see HeldFindings. The
    correlator weighs each error template once and drops such events, so the diagnosis is the same (tested against
    an unfolded scan), and a warning printed every step no longer grows memory. ``firstfault match`` keeps every
    finding.
    """

    def __init__(self, matcher: Matcher, source: str, base: Who, year: int, order_base: int = 0,
                 fold_context: bool = False) -> None:
        self._matcher = matcher
        self._base = base
        self._year = year
        self._carry = b""
        self._line_no = 1  # number of the first line in the next buffer
        # Logs repeat lines verbatim (the same warning every step): a distinct line's speaker, time and fold rows
        # are read once, and its records share one copy of its text.
        self._plans: dict[tuple[str, str | None], _Plan] = {}
        self.result = SourceResult(source)
        self._context = KeptContext()
        self._structured = Sniffer(source, base.rank)
        # The C loop or the Python path (catalog/native.py), chosen once, when the source's scan starts.
        module = linescan()
        self._held = HeldFindings(source, order_base, fold_context, self.result.findings, native=module)
        self._lines: Memo = {}  # the matcher's memo of this source's repeated lines
        # id of a memo's LineMatch -> [it, its plan, repeats in this buffer not yet counted, the latest one's start
        # and end]: filled in by the matcher's C loop, which leaves those lines out (see Matcher.spans), else here.
        self._inert: dict[int, list[Any]] = {}
        self._buffer_no = 0
        self._hydra = False  # MPICH Hydra's "[R] " labels every line (correlator/hydra_labels.py)
        self._whos: dict[Who, Who] = {}  # each speaker's one Who
        self._errorish = _errorish_folded if fold_context else _errorish_whole  # a function: no cycle to self
        # What the C plan_for reads and fills in, by name (catalog/native_state.py), once per source. Nothing in
        # it refers back to the scanner: the CLI runs without the cyclic collector.
        self._plan_state = PlanState(plans=self._plans, base=base, year=year, whos=self._whos,
                                     errorish=self._errorish, sibling_kinds=matcher.sibling_kinds, plan_type=_Plan,
                                     max_line_chars=MAX_LINE_CHARS, said_memo=SAID_MEMO,
                                     folded_kinds=kept_module.FOLDED_KINDS, python_who_and_stamp=_python_who_and_stamp,
                                     line_text=line_text)
        # who_and_stamp: _python_who_and_stamp for the common shapes of line (ASCII, an NCCL header or a torchrun,
        # srun or pdsh prefix, an ISO or glog stamp or none: 2.5-5 us a distinct line in Python at 4,096 ranks),
        # None for any other shape, which Python reads (tests/unit/test_native_who.py). plan_for: _plan_for for a
        # line with no owner line (catalog/_linescan_plan.h, tests/unit/test_native_plan.py).
        self._native_who_and_stamp = None if module is None else module.who_and_stamp
        self._native_plan_for = None if module is None else module.planner(self._plan_state)
        self._keep_line = line_keeper(self._context, module)
        self._count_newlines = newline_counter(module)

    def feed(self, chunk: bytes) -> None:
        if not self.result.bytes and hydra_labelled(chunk):  # a source's head says whether Hydra labelled it
            self._hydra = True
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
        self._held.finish()
        if found := self._structured.finish():
            self.result.structured = [*self.result.structured, found]
        self.result.context = self._context.records()
        if self._hydra:
            self.result.context.append(labelled_record(self.result.source))
        return self.result

    def _process(self, buffer: bytes, advance: bool) -> None:
        counted_to = 0
        line_no = self._line_no
        self._buffer_no += 1
        inert = self._inert
        touched: dict[int, list[Any]] = {}  # the inert entries seen in this buffer
        marks: list[int] = []  # offsets of the lines numbered below, and their numbers: where _settle counts from
        numbers: list[int] = []
        for start, end, lm in self._matcher.spans(buffer, self._lines, (inert, touched)):
            known = inert.get(id(lm))
            if known is not None and known[0] is lm:
                # A line seen before that yields only rows kept already: note it, numbered once per buffer (what
                # the matcher's C loop does itself, where it runs).
                known[2] += 1
                known[3], known[4] = start, end
                touched[id(known)] = known
                continue
            line_no += self._count_newlines(buffer, counted_to, start)
            counted_to = start
            marks.append(start)
            numbers.append(line_no)
            self._record(buffer, lm, start, end, line_no)
        if touched:
            settled_to, settled_no = self._settle(buffer, touched, marks, numbers)
            if settled_to > counted_to:  # count the rest from there: each newline is counted once
                counted_to, line_no = settled_to, settled_no
        if advance:  # count only the newlines after the last match: the ones before it are counted above
            line_no += self._count_newlines(buffer, counted_to)
            self._line_no = line_no + (0 if buffer.endswith(b"\n") else 1)
            self.result.lines = self._line_no - 1

    def _position(self, start: int, k: int) -> int:
        """Where a record stands in the source (buffer, offset, its index among its line's records): the order
        records are kept in, whichever path kept them."""
        return ((self._buffer_no << 40 | start) << 4) + k

    def _settle(self, buffer: bytes, touched: dict[int, list[Any]], marks: list[int], numbers: list[int]
                ) -> tuple[int, int]:
        """Count the inert lines' error rows, and give their folded rows their latest occurrence, numbering it by
        counting newlines from the nearest line numbered before it. Returns the last offset numbered, and its
        line number."""
        line_no, counted_to = self._line_no, 0
        for entry in sorted(touched.values(), key=_latest_start):
            _, plan, seen, start, end = entry
            entry[2] = 0
            nearest = bisect_right(marks, start) - 1
            if nearest >= 0 and marks[nearest] > counted_to:
                line_no, counted_to = numbers[nearest], marks[nearest]
            line_no += self._count_newlines(buffer, counted_to, start)
            counted_to = start
            time = plan.stamp.time if plan.stamp else None
            text = plan.own_text(buffer[start:end])
            for k, (kind, _captures, row) in enumerate(plan.contexts):
                if row is None:
                    continue
                if kind == "errorish":
                    self._context.repeat(kind, row, 0, None, text, 0, times=seen)
                else:
                    self._context.repeat(kind, row, line_no, time, text, self._position(start, k))
        return counted_to, line_no

    def _record(self, buffer: bytes, lm: LineMatch, start: int, end: int, line_no: int) -> None:
        # An indented line may be a continuation: who said it may be on the line that started the message.
        indented = lm.text[:1].isspace() and _SRUN_PADDED.match(lm.text) is None
        owner = _owner_line(buffer, start) if indented else None
        raw = buffer[start:end]
        native = self._native_plan_for
        plan = native(lm, raw) if native is not None and owner is None else self._plan_for(lm, owner, raw)
        who, stamp = plan.who, plan.stamp
        if plan.contexts:
            time = stamp.time if stamp else None
            at = (self._buffer_no << 40 | start) << 4  # _position(start, 0): the line's records follow it
            self._keep_line(plan.contexts, self.result.source, line_no, who, time, plan.own_text(raw), at)
            if lm.signature is None and plan.folded_only and not indented:
                # From now on this exact line only repeats rows kept already: the cheap path takes it. Not an
                # indented line: its speaker may be another line's (its owner), which the cheap path never reads;
                # had one such line's plan been kept, the line's speaker would depend on what this scanner read
                # before (a first copy at a buffer's start, with no owner), not on the line and the ones above it.
                if len(self._inert) >= SAID_MEMO:
                    self._inert.clear()
                self._inert[id(lm)] = [lm, plan, 0, 0, 0]
        if lm.signature is not None:
            self._signature_line(buffer, start, (lm.signature, lm.text, lm.fields, plan.text, line_no, stamp, who))

    def _signature_line(self, buffer: bytes, start: int, line: SignatureLine) -> None:
        """A line that matched a signature, at ``start`` in ``buffer``: to the findings (see HeldFindings)."""
        self._held.add(line, self._continues_event(buffer, start, line[4], line[6]))

    def _plan_for(self, lm: LineMatch, owner: str | None, raw: bytes) -> _Plan:
        """Who said the line, when, its text as records keep it, and the fold row of each context record: the
        same for every line that shares ``lm`` (its siblings: see Matcher.spans), but for the text."""
        key = (lm.text, owner)
        plan = self._plans.get(key)
        if plan is None:
            line = line_text(raw) if self._matcher.may_be_sibling(lm) else lm.text  # decoded once, in spans
            # C first, called here without a Python frame between (this runs for every distinct line)
            native = self._native_who_and_stamp
            found = native(line, self._base, self._year) if native is not None and owner is None else None
            who, stamp = found or _python_who_and_stamp(line, self._base, owner, self._year)
            # One Who per speaker: the records of a rank's thousands of lines share it, and the pool pickles it once
            who = self._whos.setdefault(who, who) if len(self._whos) < SAID_MEMO else who
            text = line.strip()[:500]
            contexts = []
            folded_only = True
            for kind, captures in lm.context.items():
                if kind == "errorish":
                    catalogued = lm.signature is not None and not lm.signature.generic
                    item = self._errorish(captures, who, text, catalogued)
                else:
                    item = (kind, captures, fold_row(kind, captures, who))
                folded_only = folded_only and item[2] is not None
                contexts.append(item)
            plan = _Plan(who, stamp, text, raw, contexts, folded_only)
            if len(lm.text) <= MAX_LINE_CHARS:  # a truncated text may stand for lines that differ further on
                if len(self._plans) >= SAID_MEMO:
                    self._plans.clear()
                self._plans[key] = plan
        return plan

    def _continues_event(self, buffer: bytes, start: int, line_no: int, who: Who) -> bool:
        if self._held.last_event is None:
            return False
        last_line, last_who = self._held.last_event
        gap = line_no - last_line
        if gap <= 0 or gap > MAX_EVENT_GAP or last_who != who:
            return False
        return gap == 1 or lines_between_continue(buffer, start, gap)


@dataclass(slots=True)
class _Plan:  # slots: the scanner reads its fields for every line, and a slot is the fastest attribute to read
    who: Who
    stamp: Stamp | None
    text: str
    raw: bytes  # the line it was read from: its siblings' text is their own
    contexts: list[tuple[str, dict[str, Any], Row | None]]  # (kind, captures, fold row) per context record
    folded_only: bool  # every record of it is folded: its repeats only count rows kept already

    def own_text(self, raw: bytes) -> str:
        """The text a record of the line ``raw`` keeps: this plan's, unless ``raw`` is a sibling's."""
        return self.text if raw == self.raw else line_text(raw).strip()[:500]
