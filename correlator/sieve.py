"""The few items a step reads, picked out of a list of every rank's without a Python frame an item. Pure.

Many of correlation's steps read only the findings of a few signatures, the records of a few sources, or the lines
that start as one launcher's prefix does, and find none or a handful among a job's 4.6 findings and 7 records a
rank: the Python loop that looked at every item to find them was most of what such a step cost (issue 23: speed
per rank; `python -m bench.correlation_lines` counts them). Here ``compress`` over ``map`` of a set's
``__contains__`` (or ``str.startswith``) over an attribute getter's values does the looking in C; what comes out is
read in Python as before, in the same order, so each step's answer is the one its full loop gave.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from itertools import compress, count, repeat
from operator import attrgetter, contains
from typing import Any, TypeVar

T = TypeVar("T")

SIGNATURE, SOURCE, KIND, FIELDS, TEXT = (attrgetter("signature"), attrgetter("source"), attrgetter("kind"),
                                         attrgetter("fields"), attrgetter("text"))
ENTRY = SIGNATURE  # an event's catalog entry (its ``signature``)


def where(items: Sequence[Any], attr: Callable[[Any], Any], wanted: Collection[Any]) -> list[int]:
    """The indexes of the items whose ``attr`` is in ``wanted`` (a set), in order."""
    return list(compress(count(), map(wanted.__contains__, map(attr, items))))


def having(items: Sequence[T], attr: Callable[[Any], Any], wanted: Collection[Any]) -> list[T]:
    """The items whose ``attr`` is in ``wanted`` (a set), in order."""
    return list(compress(items, map(wanted.__contains__, map(attr, items))))


def with_field(items: Sequence[T], name: str) -> list[T]:
    """The findings (or records) whose fields hold ``name``, in order."""
    return list(compress(items, map(contains, map(FIELDS, items), repeat(name))))


def with_field_at(items: Sequence[Any], name: str) -> list[int]:
    """The indexes of the findings (or records) whose fields hold ``name``, in order."""
    return list(compress(count(), map(contains, map(FIELDS, items), repeat(name))))


def texts_starting(records: Sequence[T], prefix: str) -> list[T]:
    """The context records whose text starts with ``prefix``, in order (a finding's text: packed_text.starting)."""
    return list(compress(records, map(str.startswith, map(TEXT, records), repeat(prefix))))


def of_entries(events: Sequence[T], test: Callable[[Any], bool]) -> list[T]:
    """The events whose catalog entry passes ``test``, in order: each distinct entry tested once (a job's events
    are of a dozen entries), the events picked in C by their entry's identity."""
    entries = list(map(ENTRY, events))
    distinct = dict(zip(map(id, entries), entries, strict=True))
    passing = {key for key, entry in distinct.items() if test(entry)}
    return list(compress(events, map(passing.__contains__, map(id, entries))))


def replaced(items: list[T], indexes: Sequence[int], renamed: Callable[[T], T]) -> list[T] | None:
    """A copy of ``items`` with each item at ``indexes`` as ``renamed`` returns it; None where it returned every
    one of them itself (nothing changed, nothing copied)."""
    out: list[T] | None = None
    for i in indexes:
        new = renamed(items[i])
        if new is not items[i]:
            if out is None:
                out = list(items)
            out[i] = new
    return out
