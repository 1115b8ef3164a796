"""Which of a source's signature lines become findings, and of which event: the part of reading a source that
depends on every earlier signature line of it (the last one's speaker and line, the rows seen, the flood counts,
the finding held back). SourceScanner feeds it line by line; scan/split.py feeds it the lines that workers read
in pieces of one file, in the file's order, so that the findings are the ones one scanner makes. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from catalog.model import Signature
from correlator.floods import Fate, Floods
from correlator.speakers import Who
from correlator.templates import shape
from correlator.timestamps import Stamp
from schemas.findings import Finding, Role, Speaker

SAID_MEMO = 4096  # rows and speakers remembered per source
# A signature line as the fold takes it: (signature, its matched text, its captures, its text as records keep it,
# line number, time stamp, speaker).
SignatureLine = tuple[Signature, str, dict[str, Any], str, int, Stamp | None, Who]
# The slots of a Finding and of a Speaker in the order _finding and _speaker give them to the C makers
# (catalog/_linescan_slotted.h), which refuse to bind unless these are every slot the class has.
FINDING_SLOTS = ("signature", "generic", "role", "source", "line_no", "text", "speaker", "time", "clock", "fields",
                 "order", "event", "repeats")
SPEAKER_SLOTS = ("rank", "host", "pid", "device", "local_rank")
_makers: dict[ModuleType, tuple[Callable[..., Finding], Callable[..., Speaker]]] = {}


def native_makers(module: ModuleType | None) -> tuple[Callable[..., Finding] | None, Callable[..., Speaker] | None]:
    """The C makers of Findings and Speakers, bound once per module (a Finding's generated __init__, a Python
    frame with keyword arguments, cost 1.5-5 us, for each of a rank file's ~3.7 findings); (None, None) on the
    Python path."""
    if module is None:
        return None, None
    made = _makers.get(module)
    if made is None:
        made = _makers[module] = (module.slotted(Finding, FINDING_SLOTS), module.slotted(Speaker, SPEAKER_SLOTS))
    return made


class HeldFindings:
    """The findings of one source's signature lines, given in order with whether each continues the event of the
    one before it (``continues``: the reader's call, which needs the bytes between them; see ``last_event``).

    With ``fold_context`` (a diagnosis), repeats are kept once: a context-role finding that makes an event of its
    own (nothing before or after it joined it), per (signature, speaker, template), is held back and kept only if
    the next finding joins its event; the flood bound of floods.py applies to the others."""

    def __init__(self, source: str, order_base: int = 0, fold_context: bool = False,
                 findings: list[Finding] | None = None, native: ModuleType | None = None) -> None:
        self.source = source
        self.findings = [] if findings is None else findings  # appended to: `firstfault match` empties it as it goes
        self.last_event: tuple[int, Who] | None = None  # (line_no, who) of the last signature line
        self._event_start = 0
        self._order = order_base
        self._fold_context = fold_context
        self._context_rows: set[tuple[Any, ...]] = set()  # context-role rows seen in this source
        self._floods = Floods()  # the bound on a failure line printed thousands of times (see floods.py)
        # A repeated context-role finding's facts (line, order): kept if the next finding joins its event.
        self._pending: tuple[SignatureLine, int] | None = None
        self._speakers: dict[Who, Speaker] = {}  # frozen: shared by the findings of one speaker
        self._new_finding, self._new_speaker = native_makers(native)  # the C loop's (catalog.native), else None

    def add(self, line: SignatureLine, continues: bool) -> None:
        sig, _, fields, said, line_no, _, who = line
        if continues:
            event = self._event_start
        else:
            event = self._event_start = line_no
        self.last_event = (line_no, who)
        self._order += 1
        pending, self._pending = self._pending, None
        if pending is not None and event == pending[0][4]:
            self.findings.append(self._finding(*pending))  # it began a traceback or message after all
            self._floods.held_kept()
        elif pending is not None:
            self._floods.held_dropped()
        if self._fold_context and sig.role is Role.CONTEXT and event == line_no:
            row = (sig.id, who, shape(said)[0])
            if row in self._context_rows:
                self._pending = (line, self._order)  # built into a Finding only if the next finding joins
                return
            if len(self._context_rows) < SAID_MEMO:
                self._context_rows.add(row)
        elif self._fold_context and (fate := self._floods.fate(sig.id, event, line_no, who, said,
                                                               fields)) is not Fate.KEEP:
            if fate is Fate.HOLD:
                self._pending = (line, self._order)
            return
        self.findings.append(finding := self._finding(line, self._order, event))
        self._floods.kept(finding)

    def skip(self, count: int) -> None:
        """``count`` signature lines left out, each certain to be dropped (a signature's lines deep in one event: see
        scan/split.py); they still took their place in the order."""
        self._order += count

    def finish(self) -> list[Finding]:
        if self._pending is not None:  # the next shard's first finding may continue its event: keep it
            self.findings.append(self._finding(*self._pending))
            self._pending = None
        return self.findings

    def _finding(self, line: SignatureLine, order: int, event: int | None = None) -> Finding:
        sig, text, fields, _, line_no, stamp, who = line
        if (new := self._new_finding) is not None:  # the keywords below, in FINDING_SLOTS' order
            return new(sig.id, sig.generic, sig.role, self.source, line_no, text.strip(), self._speaker(who),
                       stamp.time if stamp else None, stamp.clock if stamp else None, dict(fields), order,
                       line_no if event is None else event, 0)
        return Finding(  # not validated: a test checks that the scanner's findings validate back to themselves
            signature=sig.id,
            generic=sig.generic,
            role=sig.role,
            source=self.source,
            line_no=line_no,
            text=text.strip(),
            speaker=self._speaker(who),
            time=stamp.time if stamp else None,
            clock=stamp.clock if stamp else None,
            fields=dict(fields),  # its own: the matcher's memo keeps the other
            order=order,
            event=line_no if event is None else event,
        )

    def _speaker(self, who: Who) -> Speaker:
        """One Speaker per speaker of the source: a rank's findings share it, and the pool pickles it once."""
        speaker = self._speakers.get(who)
        if speaker is None:
            if len(self._speakers) >= SAID_MEMO:
                self._speakers.clear()
            new = self._new_speaker  # a Who's items are SPEAKER_SLOTS' values, in their order
            speaker = self._speakers[who] = new(*who) if new is not None else Speaker(
                rank=who.rank, host=who.host, pid=who.pid, device=who.device, local_rank=who.local_rank)
        return speaker
