"""The state the C line loop (catalog._linescan) works on, by name: its interface with the correlator.

The C functions that do a scanner's per-line work read and fill one object each, whose fields are these and no
others: ``planner(PlanState)`` and ``keeper(KeptState)`` read every field by name once, when a scanner binds
them, and raise a TypeError naming a field that is missing or of the wrong type. So renaming a field here, or
in the correlator code that fills these, fails at once and by name (tests/unit/test_native_state.py holds these
classes to the names the C code exports: PLAN_STATE_FIELDS, PLAN_FIELDS, KEPT_STATE_FIELDS). The Python path
(correlator/reading.py, correlator/kept.py) reads and fills the same fields: it is the reference the C one is
compared with. The types of the correlator's values (its Who, Stamp, ContextRecord) are ``Any`` here: the
catalog does not import the correlator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class PlanState:
    """What plan_for (catalog/_linescan_plan.h; in Python SourceScanner._plan_for) reads and fills for one
    source, made once per scanner. A plan is who said a distinct line, when, its text and the fold row of each of
    its context records.

    - ``plans``: dict, (line text, None) -> plan; filled in, and cleared once it holds ``said_memo`` plans.
    - ``base``: Who, the speaker a line without a prefix has (the source's own rank and host).
    - ``year``: int, for time stamps that print none.
    - ``whos``: dict, Who -> the one equal Who every record of that speaker shares; filled in up to ``said_memo``.
    - ``errorish``: callable (captures, who, text, catalogued) -> (kind, captures, row): an errorish record.
    - ``sibling_kinds``: frozenset of context kinds whose lines share one LineMatch (Matcher.sibling_kinds).
    - ``plan_type``: the slotted class plans are made of; C sets its fields who, stamp, text, raw, contexts and
      folded_only (PLAN_FIELDS) without calling its __init__.
    - ``max_line_chars``: int, a line longer than this is truncated and its plan not kept.
    - ``said_memo``: int, how many plans and speakers are remembered.
    - ``folded_kinds``: frozenset of the context kinds that are folded (correlator.kept.FOLDED_KINDS).
    - ``python_who_and_stamp``: callable (line, base, owner, year) -> (who, stamp), for the lines C leaves to it.
    - ``line_text``: callable (raw bytes) -> str, a sibling's own text.
    """

    plans: dict[Any, Any]
    base: Any
    year: int
    whos: dict[Any, Any]
    errorish: Callable[..., tuple[str, dict[str, Any], Any]]
    sibling_kinds: frozenset[str]
    plan_type: type
    max_line_chars: int
    said_memo: int
    folded_kinds: frozenset[str]
    python_who_and_stamp: Callable[..., tuple[Any, Any]]
    line_text: Callable[[bytes], str]


@dataclass(slots=True)
class KeptState:
    """One source's kept context records (correlator.kept.KeptContext holds one): what keep_line
    (catalog/_linescan_kept.h; in Python KeptContext.keep_line) reads and fills. The C loop holds the containers
    it was bound to: they are changed in place, never replaced.

    - ``records``: list of (position, ContextRecord), in the order kept.
    - ``first``: dict, folded row -> the ContextRecord of its first occurrence.
    - ``last``: dict, folded row -> (position, line_no, time, text) of its latest occurrence.
    - ``errors``: dict, errorish row -> [its first ContextRecord, times seen].
    - ``errors_dropped``: int, error lines of rows beyond MAX_ERROR_ROWS (read and written on the state).
    """

    records: list[tuple[int, Any]] = field(default_factory=list)
    first: dict[Any, Any] = field(default_factory=dict)
    last: dict[Any, tuple[int, int, Any, str]] = field(default_factory=dict)
    errors: dict[Any, list[Any]] = field(default_factory=dict)
    errors_dropped: int = 0
