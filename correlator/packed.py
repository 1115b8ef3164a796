"""A SourceResult as one process sends it to another: its findings and context records as plain tuples. Pure.

Both pools pickle results across processes: `firstfault diagnose`'s (scan/pool.py) and the embedded service's
scan processes (pipeline/scanpool.py). Pickle writes and reads plain tuples in C; a NamedTuple costs a Python call
each way (at 4,096 ranks a worker's 39,000 records took twice as long to pickle as plain tuples), a slotted
Finding pickles its fields as a dict, and a frozen Speaker goes through Python code: a worker's 17,700 findings
took 79 ms to pickle and the parent 42 ms to read, as tuples 33 and 37 ms (rebuilt included). A speaker's tuple
is made once, so the findings of one speaker still share one object on both sides.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from catalog.native import linescan
from correlator.held import native_makers
from correlator.interned import Interner
from correlator.kept import ContextRecord
from correlator.reading import SourceResult
from schemas.findings import Finding, Speaker

# (the result without its records and findings, the records, the findings)
Packed = tuple[SourceResult, list[tuple[Any, ...]], list[tuple[Any, ...]]]

# A Finding's fields in its dataclass order (tests/e2e/test_pool.py checks it), as plain values
FINDING_FIELDS = ("signature", "generic", "role", "source", "line_no", "text", "speaker", "time", "clock", "fields",
                  "order", "event", "repeats")
SPEAKER_FIELDS = ("rank", "local_rank", "host", "pid", "device")
_finding_values = attrgetter(*FINDING_FIELDS)
_speaker_values = attrgetter(*SPEAKER_FIELDS)
_SPEAKER_AT = FINDING_FIELDS.index("speaker")
_new_tuple = tuple.__new__


def pack(result: SourceResult, speakers: dict[int, tuple[Any, ...]]) -> Packed:
    """`result` as plain tuples (its lists moved out of it); `speakers` (by id) is shared by a message's results,
    so that each speaker is one tuple in it."""
    records, result.context = result.context, []
    found, result.findings = result.findings, []
    packed_findings = []
    for finding in found:
        values = _finding_values(finding)
        speaker = speakers.get(id(finding.speaker))
        if speaker is None:
            speaker = speakers[id(finding.speaker)] = _speaker_values(finding.speaker)
        packed_findings.append((*values[:_SPEAKER_AT], speaker, *values[_SPEAKER_AT + 1 :]))
    return result, [tuple(rec) for rec in records], packed_findings


def unpack(packed: Packed, speakers: dict[tuple[Any, ...], Speaker], interner: Interner | None) -> SourceResult:
    """A packed result rebuilt, its texts and field dicts shared with every other one `interner` saw
    (correlator/interned.py): pickled, each message had copies of its own. Without an interner, as they came:
    the embedded service's thread that stores them has no time to spare (interning was half of rebuilding)."""
    result, records, found = packed
    if interner is None:
        result.context = [_new_tuple(ContextRecord, rec) for rec in records]
    else:
        result.source = interner.text(result.source)
        result.context = interner.records(records)
    findings = []
    new = native_makers(linescan())[0]  # the C maker (its values in FINDING_SLOTS order), else __init__
    for (signature, generic, role, source, line_no, said, who, time, clock, captured, order, event, repeats) in found:
        speaker = speakers.get(who)
        if speaker is None:
            speaker = speakers[who] = Speaker(*who)
        findings.append(Finding(signature=signature, generic=generic, role=role, source=source,
                                line_no=line_no, text=said, speaker=speaker, time=time, clock=clock,
                                fields=captured, order=order, event=event, repeats=repeats) if new is None else
                        new(signature, generic, role, source, line_no, said, speaker, time, clock, captured, order,
                            event, repeats))
    result.findings = findings
    if interner is not None:
        result.findings = interner.findings(result)
    return result

