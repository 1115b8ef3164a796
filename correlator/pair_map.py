"""A map keyed by (host, number) kept as one small map a host, in the order a flat dict would keep (issue 23). Pure.

IdentityMap's (host, pid) -> rank and (host, PCI bus) -> rank hold one entry a rank from naming to the diagnosis's
end. As a flat dict each entry also held its key, a 2-tuple (64 bytes: GC-tracked), beside the dict's own slot: at
4,096 ranks the two maps were 0.38 KB a rank. Here the host names a small dict of number -> value, and the flat
order (the order a dict's items come in, which readers' first-wins and last-wins choices depend on) is kept as
the sequence of hosts, one small int a key (array 'i'): a host's own dict keeps its keys in their order, so the
k-th time a host appears in the sequence is its dict's k-th key. Keys are never moved by an update, as in a dict.
Reads and writes look like a dict's: ``m[(host, pid)]``, ``get``, ``in``, ``setdefault``, ``items()``, ``==``.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterator, Mapping, MutableMapping
from typing import Any, TypeVar

V = TypeVar("V")


class PairMap(MutableMapping[tuple[Any, Any], V]):
    """``dict[tuple[host, number], V]`` that keeps no tuple a key (see the module's doc)."""

    __slots__ = ("_by_host", "_host_at", "_hosts", "_order")

    def __init__(self, items: Mapping[tuple[Any, Any], V] | None = None) -> None:
        self._by_host: dict[Hashable, dict[Hashable, V]] = {}
        self._hosts: list[Hashable] = []  # each host once, by its number in _order
        self._host_at: dict[Hashable, int] = {}
        self._order = array("i")  # a key's host's number, in the order keys were first set
        if items:
            self.update(items)

    def __getitem__(self, key: tuple[Any, Any]) -> V:
        host, number = key
        inner = self._by_host.get(host)
        if inner is None:
            raise KeyError(key)
        return inner[number]

    # get and `in` are asked once a finding or more (events, naming): two lines each
    def get(self, key: tuple[Any, Any], default: V | None = None) -> V | None:  # type: ignore[override]
        inner = self._by_host.get(key[0])
        return default if inner is None else inner.get(key[1], default)

    def __contains__(self, key: object) -> bool:
        inner = self._by_host.get(key[0]) if type(key) is tuple and len(key) == 2 else None
        return inner is not None and key[1] in inner  # type: ignore[index]

    def __setitem__(self, key: tuple[Any, Any], value: V) -> None:
        host, number = key
        inner = self._by_host.get(host)
        if inner is None:
            inner = self._by_host[host] = {}
            self._host_at[host] = len(self._hosts)
            self._hosts.append(host)
        if number not in inner:
            self._order.append(self._host_at[host])
        inner[number] = value

    def setdefault(self, key: tuple[Any, Any], default: Any = None) -> Any:
        inner = self._by_host.get(key[0])
        if inner is None or key[1] not in inner:
            self[key] = default
            return default
        return inner[key[1]]

    def __delitem__(self, key: tuple[Any, Any]) -> None:
        """Rare (nothing in the correlator deletes): the host's k-th appearance leaves the order with its key."""
        host, number = key
        inner = self._by_host.get(host)
        if inner is None or number not in inner:
            raise KeyError(key)
        k = list(inner).index(number)
        del inner[number]
        at, seen = self._host_at[host], 0
        for i, h in enumerate(self._order):
            if h == at:
                if seen == k:
                    del self._order[i]
                    break
                seen += 1

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        hosts, by_host = self._hosts, self._by_host
        keys = {host: iter(inner) for host, inner in by_host.items()}
        for at in self._order:
            host = hosts[at]
            yield host, next(keys[host])

    def items(self) -> Iterator[tuple[tuple[Any, Any], V]]:  # type: ignore[override]  # iterated, never kept
        by_host = self._by_host
        return ((key, by_host[key[0]][key[1]]) for key in self)

    def values(self) -> Iterator[V]:  # type: ignore[override]  # iterated, never kept
        by_host = self._by_host
        return (by_host[host][number] for host, number in self)

    def __len__(self) -> int:
        return len(self._order)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return len(self) == len(other) and all(k in other and other[k] == v for k, v in self.items())

    __hash__ = None  # type: ignore[assignment]  # as a dict's

    def __repr__(self) -> str:
        return f"PairMap({dict(self.items())!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self.items()),))
