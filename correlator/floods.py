"""A bound on the findings of one source, for a diagnosis: a rank stuck in a retry loop prints its failure line
thousands of times, each with another sequence number or byte count, and each was a finding held to the end
(1.5 million lines: 1.5 GB). What a diagnosis weighs of them is the first few: the event's best line and evidence
are its earliest of the highest-ranked signature, and a fault printed again is not new evidence (see scoring).
So, per source, a diagnosis keeps:
- of one signature within one event (a traceback, or a message that runs on line after line), the first
  MAX_IN_EVENT findings;
- once the source has kept FLOOD_AFTER findings, of one row (signature, speaker, template, and the fields that
  say whom a line is about), the first MAX_REPEATS events; a later one is held back and kept only if the next
  finding joins its event (what SourceScanner does with a repeated context-role line).
Pure: no I/O here."""

from __future__ import annotations

from enum import Enum
from typing import Any

from correlator.speakers import Who
from correlator.templates import shape

FLOOD_AFTER = 256  # a rank's own failure lines are a handful: below this nothing is masked or counted by row
MAX_IN_EVENT = 16
MAX_REPEATS = 16
MAX_ROWS = 4096
# The fields events read to say whom a line is about (correlator/events.py): a row keeps them whole, so that lines
# naming different ranks or peers are never taken for repeats of each other.
NAMING_FIELDS = ("host", "rank", "ranks", "pid", "local_rank", "pci", "peer")


def in_event_key(signature: str, fields: dict[str, Any]) -> tuple[Any, ...]:
    """What MAX_IN_EVENT counts within one event: a signature's lines about one rank, host or peer. A run of lines
    each about another one (srun's `HOST: tasks N-M: Exited ...` for every node of a large job) is not a repeat."""
    return (signature, *map(fields.get, NAMING_FIELDS))  # map: no generator frame a finding


class Fate(Enum):
    KEEP = "keep"
    HOLD = "hold"  # kept only if the next finding joins its event
    DROP = "drop"


class Floods:
    """The counts behind each finding's fate, for one source. An event held back and then left out counts as a
    repeat of the last event kept of its row (Finding.repeats): the collateral groups still count every line."""

    __slots__ = ("_event", "_held", "_in_event", "_kept", "_last_row", "_rows")

    def __init__(self) -> None:
        self._kept = 0
        self._event = -1
        self._in_event: dict[tuple[Any, ...], int] = {}  # in_event_key -> findings kept in the current event
        self._rows: dict[tuple[Any, ...], list[Any]] = {}  # row -> [events kept that began with it, the last one]
        self._last_row: tuple[Any, ...] | None = None  # the row of the finding just kept, if it was read
        self._held: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None  # (in-event key, row) of the one held back

    def fate(self, signature: str, event: int, line_no: int, who: Who, text: str, fields: dict[str, Any]) -> Fate:
        self._last_row = None
        if event != self._event:
            self._event = event
            self._in_event.clear()
        key = in_event_key(signature, fields)
        seen = self._in_event.get(key, 0)
        if seen >= MAX_IN_EVENT:
            return Fate.DROP
        if event == line_no and self._kept >= FLOOD_AFTER:
            row = (signature, who, shape(text)[0], *map(fields.get, NAMING_FIELDS))
            entry = self._rows.get(row)
            if entry is not None and entry[0] >= MAX_REPEATS:
                self._held = (key, row)
                return Fate.HOLD
            if entry is not None:
                entry[0] += 1
                self._last_row = row
            elif len(self._rows) < MAX_ROWS:
                self._rows[row] = [1, None]
                self._last_row = row
        self._in_event[key] = seen + 1
        self._kept += 1
        return Fate.KEEP

    def kept(self, finding: Any) -> None:
        """The Finding made of the line last kept (by fate(), or with no fate read)."""
        if self._last_row is not None:
            self._rows[self._last_row][1] = finding
            self._last_row = None

    def held_kept(self) -> None:
        """The held finding was kept after all (the next one joined its event)."""
        if self._held is not None:
            key, _ = self._held
            self._held = None
            self._in_event[key] = self._in_event.get(key, 0) + 1
            self._kept += 1

    def held_dropped(self) -> None:
        """The held finding is left out: one more repeat of the last event kept of its row."""
        if self._held is not None:
            _, row = self._held
            self._held = None
            self._rows[row][1].repeats += 1
