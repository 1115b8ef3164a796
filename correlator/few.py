"""Sets of values by key where nearly every key has one value: a source's host, a rank's host. Pure.

Naming's steps ask, per source or per rank, which hosts, ranks or processes its lines name: one almost always.
A set each (216 bytes empty or holding one) for every source and every rank was the peak of naming, 1.1 KB a rank
at 8,192 ranks (issue 23: memory per rank). Here the one value is stored as itself, and a set made only when a
second distinct value comes; what a reader gets is the set the set-per-key code had.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)
_ABSENT: Any = object()


class _Many(set[Any]):
    """Two values or more under one key: a type of its own, so that no stored value is mistaken for it."""


class FewSets(Generic[K, V]):
    """``dict[K, set[V]]`` as built by ``d.setdefault(k, set()).add(v)``, keys in the order first added."""

    __slots__ = ("_by_key",)

    def __init__(self) -> None:
        self._by_key: dict[K, Any] = {}  # a value, or a _Many of them

    def add(self, key: K, value: V) -> None:
        held = self._by_key.setdefault(key, value)
        if held is not value and held != value:  # (a _Many equals no value)
            if type(held) is _Many:
                held.add(value)
            else:
                self._by_key[key] = _Many((held, value))

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, key: K) -> set[V]:
        """The values added under ``key`` (an empty set for none): a new set, the stored one not exposed."""
        held = self._by_key.get(key, _ABSENT)
        if held is _ABSENT:
            return set()
        return set(held) if type(held) is _Many else {held}

    def count(self, key: K) -> int:
        held = self._by_key.get(key, _ABSENT)
        return 0 if held is _ABSENT else len(held) if type(held) is _Many else 1

    def __iter__(self) -> Iterator[K]:
        return iter(self._by_key)

    def items(self) -> Iterator[tuple[K, set[V]]]:
        for key in self._by_key:
            yield key, self.get(key)
