"""A map to host names that also knows, for each host, what maps to it. Pure.

IdentityMap's rank -> host and address -> host maps are asked the other way round once per event: which ranks
live on the host a survivor names, and whether a name is a host at all. Scanning every rank for each question made
correlation quadratic in ranks (31 of 40 profiled seconds at 16,384 ranks); here the inverse is kept beside the map
as it is written, so each question is a lookup and the answers stay those of the scan, whoever writes the map.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

K = TypeVar("K")


def short_name(host: str) -> str:
    """A host's first label: node004 for node004.cluster.local; -48 for a name a paste elided, "...-48"."""
    return host.lstrip(".").split(".")[0]


class HostMap(dict[K, str]):
    """``dict[K, str]`` (key -> host) with ``keys_on(host)`` and the hosts by short name kept up to date.

    Every way the correlator writes the map (``m[k] = h``, ``setdefault``, ``update``) goes through here; the
    other mutators are kept correct too, so that the inverse can never lag behind the map."""

    def __init__(self, items: Mapping[K, str] | Iterable[tuple[K, str]] = (), /) -> None:
        super().__init__()
        # host -> the keys mapped to it, never none: a dict as a set (a set of a host's eight ranks takes twice
        # a dict's bytes, and keys_on sorts them anyway; issue 23)
        self._keys: dict[str, dict[K, None]] = {}
        self._by_short: dict[str, set[str]] = {}  # short name -> hosts that have a key
        self.update(items)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def _link(self, key: K, host: str) -> None:
        keys = self._keys.get(host)
        if keys is None:
            keys = self._keys[host] = {}
            self._by_short.setdefault(short_name(host), set()).add(host)
        keys[key] = None

    def _unlink(self, key: K, host: str) -> None:
        keys = self._keys[host]
        keys.pop(key, None)
        if not keys:
            del self._keys[host]
            hosts = self._by_short[short_name(host)]
            hosts.discard(host)
            if not hosts:
                del self._by_short[short_name(host)]

    def __setitem__(self, key: K, host: str) -> None:
        old = super().get(key)
        if old is not None:
            if old == host:
                super().__setitem__(key, host)
                return
            self._unlink(key, old)
        super().__setitem__(key, host)
        self._link(key, host)

    def __delitem__(self, key: K) -> None:
        host = self[key]
        super().__delitem__(key)
        self._unlink(key, host)

    def setdefault(self, key: K, host: str) -> str:
        if key in self:
            return self[key]
        self[key] = host
        return host

    def update(self, items: Mapping[K, str] | Iterable[tuple[K, str]] = (), /, **named: str) -> None:  # type: ignore[override]
        pairs = items.items() if isinstance(items, Mapping) else items
        for key, host in pairs:
            self[key] = host
        for key, host in named.items():
            self[key] = host  # type: ignore[index]

    def pop(self, key: K, *default: str) -> str:  # type: ignore[override]
        if key not in self:
            if default:
                return default[0]
            raise KeyError(key)
        host = self[key]
        del self[key]
        return host

    def popitem(self) -> tuple[K, str]:
        key, host = super().popitem()
        self._unlink(key, host)
        return key, host

    def __ior__(self, items: Any) -> HostMap[K]:  # type: ignore[override,misc]
        self.update(items)
        return self

    def clear(self) -> None:
        super().clear()
        self._keys.clear()
        self._by_short.clear()

    def keys_on(self, host: str) -> list[K]:
        """The keys mapped to ``host``, sorted."""
        return sorted(self._keys.get(host, ()))  # type: ignore[type-var]

    def has_host(self, host: str) -> bool:
        return host in self._keys

    def hosts_named(self, short: str) -> set[str]:
        """The hosts whose first label is ``short``."""
        return self._by_short.get(short, set())
