"""A field dict as its shape's shared key table and its own values (issue 23: memory per rank). Pure.

Every line of one kind has the same field names in the same order (a pattern's captures: an NCCL init line's
``rank, nranks, device, bus``, a launcher's SIGTERM line's ``pid, signal``), and only the values are the line's own.
A dict made by ``dict()`` or a literal has a key table of its own (names, hashes and values: 192 bytes for four
fields); the ``__dict__`` of an instance is a split table instead, the names and hashes kept once by the instance's
class and the dict holding its values alone (120 bytes for the same four, 72 saved a distinct dict). CPython keeps
such a dict split while its keys are set in the class's order and none is added: the field dicts are not changed
after the scan (correlator/interned.py), so ``shaped`` gives each distinct one a class per shape (its names, in
order) and returns the dict an instance of it was given: a real ``dict``, equal, iterated in the same order,
pickled and serialised as the one it replaces (a reader cannot tell them apart but by ``sys.getsizeof``).

This is the per-shape template and per-line values the columnar model of docs/performance.md names, in the form
CPython already has for it; it changes no reader.
"""

from __future__ import annotations

from typing import Any

MAX_SHAPES = 1024  # distinct name tuples given a class: a catalog's patterns have a few hundred
MAX_NAMES = 30  # CPython's shared key tables hold at most 30 names (SHARED_KEYS_MAX_SIZE)
_shapes: dict[tuple[Any, ...], type | None] = {}  # names -> the class whose instances' dicts share them


def _shape(names: tuple[Any, ...]) -> type | None:
    """The class for ``names``, or None where they cannot share a table: a name that is not a plain identifier
    (setattr would reach a dunder's descriptor, or the table would not be split), too many names or shapes."""
    if len(_shapes) >= MAX_SHAPES:
        return None
    usable = 0 < len(names) <= MAX_NAMES and all(
        type(name) is str and name.isidentifier() and not name.startswith("__") for name in names)
    made = _shapes[names] = type("FieldShape", (), {"__module__": __name__}) if usable else None
    return made


def shaped(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` as an equal dict whose key table is shared with every other of its names (itself where none
    can be: see _shape)."""
    names = tuple(fields)
    if not names:
        return fields
    cls = _shapes[names] if names in _shapes else _shape(names)
    if cls is None:
        return fields
    holder = cls()
    for name, value in fields.items():  # in order: the class's table is the first instance's names, in order
        setattr(holder, name, value)
    out: dict[str, Any] = holder.__dict__
    return out
