"""One copy of each value that many sources repeat, across the results of a scan (issue 23: memory per rank).

Every rank's log prints the same warnings, the same NCCL set-up lines but for its own numbers, and findings whose
fields are empty or equal (``{}``, ``{'peer': '10.0.0.47'}``): a scanner shares such values within its source, but
each source, and each batch a pool worker pickles, has copies of its own. At 8,192 ranks the results held 75,775
context-record field dicts of which 29,812 distinct, 37,888 finding field dicts (10,865 distinct) and 66,559 record
texts (53,736 distinct): interned, a third of the bytes the results kept. The values are never mutated after the
scan (the correlator builds new dicts where it renames: correlator/naming.py), so sharing them changes nothing a
reader sees. The memo lives as long as one scan; values that cannot be hashed stay as they are.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from correlator.kept import TEXT_UNREAD_KINDS, ContextRecord
from correlator.reading import SourceResult
from correlator.speakers import Who
from schemas.findings import Finding

_new_tuple = tuple.__new__


class Interner:
    """The first copy seen of each equal text, field dict and speaker; later equal ones are replaced by it. Times
    are left alone: equal aware datetimes may differ in their offset, which their text shows."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._fields: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._whos: dict[Who, Who] = {}

    def text(self, text: str) -> str:
        return self._texts.setdefault(text, text)

    def fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The dict of equal items, values of the same types (1, 1.0 and True are equal keys, not equal fields).
        Its memo's key is one flat tuple, names and values then their types: a tuple an item as well cost twice
        as much, and the memo holds a key for every distinct dict until the scan's end, the pool's peak (issue 23:
        0.63 KB a rank at 8,192 ranks, of 22,641 dicts)."""
        try:
            return self._fields.setdefault((*chain.from_iterable(fields.items()), *map(type, fields.values())),
                                           fields)
        except TypeError:  # a value that cannot be hashed (a list): kept as it is
            return fields

    def record(self, rec: tuple[Any, ...]) -> ContextRecord:
        """A context record (as a ContextRecord or its plain tuple) made of interned values, without the text of a
        kind whose text nothing reads (TEXT_UNREAD_KINDS)."""
        kind, fields, source, line_no, who, time, text, repeats = rec
        if kind in TEXT_UNREAD_KINDS:
            text = ""
        return _new_tuple(ContextRecord, (kind, self.fields(fields), self.text(source), line_no,
                                          self._whos.setdefault(who, who), time, self.text(text), repeats))

    def finding(self, finding: Finding) -> Finding:
        """``finding`` with interned text and fields (changed in place: a scan's findings are its own)."""
        finding.source = self.text(finding.source)
        finding.text = self.text(finding.text)
        finding.fields = self.fields(finding.fields)
        return finding

    def result(self, result: SourceResult) -> SourceResult:
        """Every record and finding of ``result`` interned (in place)."""
        result.source = self.text(result.source)
        result.context = [self.record(rec) for rec in result.context]
        for finding in result.findings:
            self.finding(finding)
        return result
