"""One copy of each value that many sources repeat, across the results of a scan (issue 23: memory per rank).

Every rank's log prints the same warnings, the same NCCL set-up lines but for its own numbers, and findings whose
fields are empty or equal (``{}``, ``{'peer': '10.0.0.47'}``): a scanner shares such values within its source, but
each source, and each batch a pool worker pickles, has copies of its own. At 8,192 ranks the results held 75,775
context-record field dicts of which 29,812 distinct, 37,888 finding field dicts (10,865 distinct) and 66,559 record
texts (53,736 distinct): interned, a third of the bytes the results kept. The values are never mutated after the
scan (the correlator builds new dicts where it renames: correlator/naming.py), so sharing them changes nothing a
reader sees. The memo lives as long as one scan; values that cannot be hashed stay as they are. It keeps the
values seen lately (_Recent): holding every distinct value to the scan's end was 0.68 KB a rank at 8,192 ranks,
the scan's peak, for values (a rank's own lines) that never come again.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import fields as dataclass_fields
from typing import Any

from catalog.native import linescan
from correlator.held import native_makers
from correlator.kept import TEXT_UNREAD_KINDS, ContextRecord
from correlator.packed_text import PackedFinding, packed
from correlator.reading import SourceResult
from correlator.shaped import shaped
from schemas.findings import Finding, Speaker

_new_tuple = tuple.__new__
_FINDING_SLOTS = tuple(f.name for f in dataclass_fields(Finding))  # what a packed finding copies (the C findings loop)
RECENT = 1 << 15  # distinct values a generation of the memo holds (see _Recent)


class _Recent(dict[Any, Any]):
    """The first copy seen of each key's value, among the keys seen in the last two generations of RECENT
    distinct keys: a value seen again moves to the current generation, and a generation's keys not seen again
    while the next one fills are forgotten (their later copies are kept as they come: equal, not shared). What
    repeats across sources (a warning every rank prints, a host's field dicts, the watchdog's fields) comes again
    within a few thousand keys; a rank's own line never does. Racing threads (the pool's receiver and the parent)
    can at worst leave a copy unshared."""

    __slots__ = ("_old",)

    def __init__(self) -> None:
        super().__init__()
        self._old: dict[Any, Any] = {}

    def share(self, key: Any, value: Any) -> Any:
        found = self.get(key)
        if found is None:  # (no value kept here is None)
            found = self[key] = self._old.pop(key, value)
            if len(self) >= RECENT:
                self._old = dict(self)
                self.clear()
        return found


class Interner:
    """The first copy seen of each equal text, field dict and speaker; later equal ones are replaced by it. Times
    are left alone: equal aware datetimes may differ in their offset, which their text shows.

    So are the numbers a new speaker or field dict holds (a rank or a pid above 256, a field's: Python caches the
    ints up to 256 alone): a rank's number was a new int in each record's speaker, each finding's speaker and
    its init line's fields (and one more for each time the pool unpickled it), 6 to 7 ints a rank more than its
    distinct values, 0.2 KB a rank at 4,096 ranks, the speakers' held to the diagnosis's end."""

    def __init__(self) -> None:
        self._texts = _Recent()  # text -> it
        self._fields = _Recent()  # flat tuple of its items and their types -> the dict
        self._whos = _Recent()  # Who -> it, its numbers shared
        self._ints = _Recent()  # int above 256 -> it
        # The C twins of records, fields, findings and the digit split (catalog/_linescan_intern.h and
        # _linescan_packed.h), chosen once: a scan's interner keeps the path it was made on (catalog/native.py).
        # They read and fill the memos above as _Recent does (a speaker not a Who: _who_miss).
        module = linescan()
        self._native_records = None if module is None else module.intern_records
        self._native_fields = None if module is None else module.intern_fields
        self._digit_runs = None if module is None else module.digit_runs
        self._native_findings = None if module is None else module.intern_findings
        self._new_speaker = native_makers(module)[1]

    def number(self, value: Any) -> Any:
        """An int above 256 (or below -5) as the first copy seen lately; any other value as it is."""
        if type(value) is not int or -5 <= value <= 256:
            return value
        shared = self._ints.get(value)
        return shared if shared is not None else self._ints.share(value, value)

    def _numbers_shared(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A new field dict's ints shared (in place: the dict is the scan's own, and read by no one yet)."""
        number = self.number
        for name in [name for name, value in fields.items() if type(value) is int and not -5 <= value <= 256]:
            fields[name] = number(fields[name])
        return fields

    def _who(self, who: Any) -> Any:
        """A new speaker of records with its rank and pid shared (a device or local rank is below 256)."""
        if not isinstance(who, tuple):
            return who
        rank, host, pid, *rest = who
        shared_rank, shared_pid = self.number(rank), self.number(pid)
        return who if shared_rank is rank and shared_pid is pid else _new_tuple(
            type(who), (shared_rank, host, shared_pid, *rest))

    def speaker(self, speaker: Speaker) -> Speaker:
        """``speaker`` with its rank and pid shared (itself where neither is above 256)."""
        rank, pid = speaker.rank, speaker.pid
        shared_rank, shared_pid = self.number(rank), self.number(pid)
        if shared_rank is rank and shared_pid is pid:
            return speaker
        if (new := self._new_speaker) is not None:  # SPEAKER_SLOTS' order; the frozen __init__ is a Python frame
            return new(shared_rank, speaker.host, shared_pid, speaker.device, speaker.local_rank)
        return Speaker(rank=shared_rank, local_rank=speaker.local_rank, host=speaker.host, pid=shared_pid,
                       device=speaker.device)

    def _who_miss(self, who: Any) -> Any:
        """A speaker of records not seen lately, kept (its rank and pid shared)."""
        return self._whos.share(who, self._who(who))

    def _fields_miss(self, key: tuple[Any, ...], fields: dict[str, Any]) -> dict[str, Any]:
        """A field dict not seen lately, kept under ``key`` (see fields): the first seen lately has its numbers
        shared and its key table its shape's (correlator/shaped.py). Both paths call this on a miss."""
        found: dict[str, Any] = self._fields.share(key, fields)
        if found is fields:
            found = self._fields[key] = shaped(self._numbers_shared(fields))
        return found

    def text(self, text: str) -> str:
        shared: str | None = self._texts.get(text)  # seen lately, most often: no call to share
        return shared if shared is not None else self._texts.share(text, text)

    def fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The dict of equal items, values of the same types (1, 1.0 and True are equal keys, not equal fields).
        Its memo's key is one flat tuple, names and values then their types: a tuple an item as well cost twice
        as much, and the memo holds a key for every distinct dict until the scan's end, the pool's peak (issue 23:
        0.63 KB a rank at 8,192 ranks, of 22,641 dicts)."""
        if (native := self._native_fields) is not None:
            shared: dict[str, Any] = native(fields, self, RECENT)
            return shared
        return self._python_fields(fields)

    def _python_fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """fields on the Python path (the C one calls it for a dict of a subclass)."""
        try:  # names, then values, then their types: as flat, and made in C without a tuple an item
            key = (*fields, *fields.values(), *map(type, fields.values()))
            found: dict[str, Any] | None = self._fields.get(key)
            return found if found is not None else self._fields_miss(key, fields)
        except TypeError:  # a value that cannot be hashed (a list): kept as it is
            return fields

    def record(self, rec: tuple[Any, ...]) -> ContextRecord:
        """A context record (as a ContextRecord or its plain tuple) made of interned values, without the text of a
        kind whose text nothing reads (TEXT_UNREAD_KINDS)."""
        kind, fields, source, line_no, who, time, text, repeats = rec
        if kind in TEXT_UNREAD_KINDS:
            text = ""
        shared_who = self._whos.get(who)
        if shared_who is None:
            shared_who = self._who_miss(who)
        return _new_tuple(ContextRecord, (kind, self.fields(fields), self.text(source), line_no, shared_who, time,
                                          self.text(text), repeats))

    def records(self, records: list[Any]) -> list[ContextRecord]:
        """[record(rec) for rec in records]: in one C call where the C loop is on."""
        if (native := self._native_records) is not None:
            made: list[ContextRecord] = native(records, self, TEXT_UNREAD_KINDS, ContextRecord, RECENT)
            return made
        return [self.record(rec) for rec in records]

    def finding(self, finding: Finding, whole: Container[str] = ()) -> Finding:
        """``finding`` with interned source and fields (changed in place: a scan's findings are its own), and its
        text interned where a record holds it too (``whole``: the texts of its source's records), else kept as
        digits and a shared skeleton (correlator/packed_text.py: a new finding, equal but for its class)."""
        finding.source = self.text(finding.source)
        finding.fields = self.fields(finding.fields)
        if finding.text not in whole:
            made = packed(finding, self.text, self._digit_runs)
            if made is not finding:
                return made
        finding.text = self.text(finding.text)
        return finding

    def findings(self, result: SourceResult) -> list[Finding]:
        """Every finding of ``result`` interned (see finding), its records interned already. The findings of a
        speaker share it still (one made a speaker, by its identity)."""
        whole = {rec.text for rec in result.context}
        if (native := self._native_findings) is not None:
            made: list[Finding] = native(result.findings, self, whole, RECENT, Finding, PackedFinding, _FINDING_SLOTS)
            return made
        speakers: dict[int, tuple[Speaker, Speaker]] = {}  # id -> (it, kept alive while its id is a key; shared)
        out = []
        last: Speaker | None = None
        shared: Speaker | None = None
        for f in result.findings:
            spoke = f.speaker
            if spoke is not last:  # a speaker's findings come together, most often
                seen = speakers.get(id(spoke))
                if seen is None:
                    seen = speakers[id(spoke)] = (spoke, self.speaker(spoke))
                last, shared = spoke, seen[1]
            if shared is not spoke and shared is not None:
                f.speaker = shared
            out.append(self.finding(f, whole))
        return out

    def result(self, result: SourceResult) -> SourceResult:
        """Every record and finding of ``result`` interned (in place)."""
        result.source = self.text(result.source)
        result.context = self.records(result.context)
        result.findings = self.findings(result)
        return result
