"""Transport errors are printed by survivors about a peer (issue 22, pattern 4).

When a process dies, every rank that was talking to it reports the loss: NCCL's sockets see the connection reset
or closed (NVIDIA/nccl src/misc/socket.cc `Call to recv from %s failed : %s`, `Connection closed by remote peer
%s`; before 2.8 `Call to recv failed : %s` without the address), connects fail (`Connect to %s failed : %s`),
InfiniBand work requests complete in error (src/transport/net_ib.cc `Got completion from peer %s with
status=%d`), and ProcessGroupNCCL reports ncclRemoteError (src/init.cc: `remote process exited or there was a
network error`). Those lines are the survivors', about the dead peer:

- when any other rank or host has evidence of its own death or fault (a Xid, an OOM kill, a segfault, a SIGKILL
  exit, a CUDA error, a Python exception), they are collateral of it;
- a socket error is always a report about the peer: collateral, pointing at the peer it names (its address
  mapped to a host through NCCL's `Using` lines, else the address itself), never at the reporter;
- an InfiniBand completion in error with nothing else in the logs is left to the usual weighing: the local HCA
  or its link may be the fault as much as the peer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from correlator.events import Event, Target
from correlator.exits import cause_like
from correlator.identity import IdentityMap
from correlator.members import (
    CATEGORY_COMMUNICATION,
    IMPLICATES_NAMED,
    IMPLICATES_PEER,
    IMPLICATES_SELF,
    ROLE_COLLATERAL,
    ROLE_CONTEXT,
    SCOPE_NODE,
)

# strerror(3) texts of a connection the peer ended, and NCCL's own words for it
_GONE = ("Connection reset by peer", "Connection closed by remote peer", "Software caused connection abort",
         "Broken pipe", "remote process exited or there was a network error")
# connect(2) errors that say the peer could not be reached: it is down, or nothing listens there. Not
# "Network is unreachable" (ENETUNREACH): the caller has no route to that network, its own configuration.
_UNREACHABLE = ("No route to host", "Connection refused", "Connection timed out", "Host is down")
_CONNECT = re.compile(r"[Cc]onnect to (?P<peer>[^\s<]+)(?:<\d+>)? (?:failed ?: ?|returned )(?P<why>[^\n]*)")
_MIN_PREFIX = 8  # a strerror text cut short (a pasted excerpt) still names its errno when this much is left


_IPV4_PEER = re.compile(r"\[?\d{1,3}(?:\.\d{1,3}){3}\]?(?:$|[<:])")  # an IPv4 peer, a port after it or not


@functools.cache
def _cut_short(phrases: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str], int]:
    """The phrases cut short (at least _MIN_PREFIX characters, not whole), the first _MIN_PREFIX characters of
    each, and the longest cut's length."""
    cuts = frozenset(p[:n] for p in phrases for n in range(_MIN_PREFIX, len(p)))
    return cuts, frozenset(p[:_MIN_PREFIX] for p in phrases), max(map(len, cuts), default=0)


def _says(text: str, phrases: tuple[str, ...]) -> bool:
    """One of the phrases is in the text, or the text ends in one cut short ("... failed : No route to").

    A cut phrase starts with a phrase's first characters: only where those occur near the end is the rest looked
    up, where trying every cut of every phrase took 440 `endswith` calls per transport error (a fifth of
    correlating 16,384 ranks)."""
    if any(p in text for p in phrases):
        return True
    cuts, heads, longest = _cut_short(phrases)
    window = text.rstrip()[-longest:]
    for head in heads:
        at = window.find(head)
        while at >= 0:
            if window[at:] in cuts:
                return True
            at = window.find(head, at + 1)
    return False


def _socket_peer(ev: Event) -> tuple[bool, str | None] | None:
    """(whether this is a socket error about a peer, the peer's address if the line names one)."""
    sig, f = ev.signature, ev.best
    peer = f.fields.get("peer") if isinstance(f.fields.get("peer"), str) else None
    # the regex where its words are (a substring test in C): most events are watchdog timeouts, a long line each
    connect = _CONNECT.search(f.text) if "onnect to " in f.text else None
    if connect is not None and _says(connect["why"], _UNREACHABLE + _GONE):
        return True, str(peer or connect["peer"])
    about_peer = sig.implicates is IMPLICATES_PEER and sig.category is CATEGORY_COMMUNICATION
    if about_peer and "status" not in f.fields and (connect is None or _says(connect["why"], _UNREACHABLE + _GONE)):
        return True, str(peer) if peer else None
    if "nccl" in sig.tags and _says(f.text, _GONE):
        return True, str(peer) if peer else None
    return None


def _ib_link(ev: Event) -> bool:
    """An InfiniBand work completion in error (its entry captures the completion status)."""
    return ev.signature.implicates is IMPLICATES_PEER and "status" in ev.best.fields


def _own_evidence(events: Iterable[Event], transport: set[int]) -> set[tuple[Target, bool]]:
    """Whoever has a fault of its own, and whether the fault is its node's: a specific cause-like line (or a
    generic one outside communication, a Python exception), not a result code wrapping a cause printed
    elsewhere, not another transport error."""
    out: set[tuple[Target, bool]] = set()
    for ev in events:
        sig = ev.signature
        if id(ev) in transport or not cause_like(ev) or sig.wrapper or ev.about_peer:
            continue
        if sig.generic and sig.category is CATEGORY_COMMUNICATION:
            continue  # an NCCL WARN no entry knows may be one more transport error
        if sig.implicates is IMPLICATES_SELF or sig.implicates is IMPLICATES_NAMED:
            node = sig.scope is SCOPE_NODE
            out.update((t, node) for t in ev.implicated if t.rank is not None or t.host is not None)
    return out


class _Elsewhere:
    """Whether any owner's fault is another process's (or, for a node's fault, another host's) than a reporter's.

    An owner is compared by rank when both it and the reporter have one and its fault is not its node's, else by
    host. Asked once per transport error with every process an owner (a job whose ranks were all killed), comparing
    with each owner was quadratic: the owners' ranks and hosts are kept as sets instead."""

    def __init__(self, owners: Iterable[tuple[Target, bool]]) -> None:
        self.ranks: set[int] = set()  # owners compared by rank when the reporter has one
        self.hosts: set[str] = set()  # every owner's host: the comparison when the reporter has no rank
        self.unranked_hosts: set[str] = set()  # the others' hosts, compared by host whatever the reporter
        for owner, node in owners:
            by_rank = owner.rank is not None and not node
            if by_rank:
                self.ranks.add(owner.rank)  # type: ignore[arg-type]
            if owner.host is not None:
                self.hosts.add(owner.host)
                if not by_rank:
                    self.unranked_hosts.add(owner.host)

    def of(self, reporter: Target) -> bool:
        if reporter.rank is None:
            return reporter.host is not None and _other_than(self.hosts, reporter.host)
        return _other_than(self.ranks, reporter.rank) or (
            reporter.host is not None and _other_than(self.unranked_hosts, reporter.host))


def _other_than(values: set[Any], value: object) -> bool:
    """``values`` holds something besides ``value``."""
    return len(values) > 1 or (len(values) == 1 and value not in values)


def _by_elimination(ev: Event, peer: str, unaddressed: set[str]) -> str | None:
    """The host of an address no line ties to one: where every failing host but one has told its address (NCCL's
    "Bootstrap : Using eth0:10.0.0.3<0>") and that one is not the reporter, the address is that host's."""
    if not _IPV4_PEER.match(peer):
        return None
    others = unaddressed - {ev.reporter.host}
    return next(iter(others)) if len(others) == 1 else None


def _point_at(ev: Event, peer: str, ids: IdentityMap, unaddressed: set[str]) -> None:
    host = ids.host_of(peer) or _by_elimination(ev, peer, unaddressed)
    if host is None:
        ev.unmapped_peer, ev.implicated = peer, []
    else:
        on_host = ids.ranks_on(host)
        ev.unmapped_peer, ev.implicated = None, [Target(on_host[0] if len(on_host) == 1 else None, host)]


def assign(events: Sequence[Event], ids: IdentityMap, deaths: Iterable[tuple[int | None, str | None]]) -> list[str]:
    """Turn the survivors' transport errors into collateral (and their peers into suspects); returns the notes
    for the explanation. ``deaths``: (rank, host) of processes the exit codes say were killed or crashed."""
    sockets: dict[int, str | None] = {}
    links: list[Event] = []
    for ev in events:
        if ev.role is ROLE_CONTEXT or ev.stale or ev.weight is not None:
            continue
        found = _socket_peer(ev)
        if found is not None:
            sockets[id(ev)] = found[1]
        elif _ib_link(ev):
            links.append(ev)
    if not sockets and not links:
        return []
    owners = _own_evidence(events, set(sockets) | {id(ev) for ev in links})
    owners |= {(Target(rank, host), False) for rank, host in deaths}
    demoted: set[Target] = set()
    linked = {id(ev) for ev in links}  # `ev in links` compared events field by field
    addressed = set(ids.host_of_ip.values())
    unaddressed = {ev.reporter.host for ev in events if ev.role is not ROLE_CONTEXT and ev.reporter.host
                   and ev.reporter.host not in addressed and not _IPV4_PEER.match(ev.reporter.host)}
    elsewhere_than = _Elsewhere(owners)
    for ev in events:
        if id(ev) not in sockets and id(ev) not in linked:
            continue
        elsewhere = elsewhere_than.of(ev.reporter)
        peer = sockets.get(id(ev))
        if id(ev) in sockets and ev.signature.implicates is not IMPLICATES_PEER:
            ev.about_peer = True  # about its peer, named or not: never the reporter's own fault
            if peer is None:
                ev.implicated = []
            else:
                _point_at(ev, peer, ids, unaddressed)
        if id(ev) in sockets or elsewhere:
            if ev.role is not ROLE_COLLATERAL:
                demoted.add(ev.reporter)
            ev.role, ev.survivor = ROLE_COLLATERAL, True
        if id(ev) in sockets and ev.unmapped_peer is not None and not ev.implicated:
            if _by_elimination(ev, ev.unmapped_peer, unaddressed) is not None:
                _point_at(ev, ev.unmapped_peer, ids, unaddressed)
            elif not owners:
                ev.implicated = [Target(None, ev.unmapped_peer)]  # the peer no log names: its address is the lead
    if not demoted:
        return []
    who = "a fault of its own elsewhere" if owners else "the peer they name"
    return [f"{len(demoted)} rank(s)/host(s) report transport errors about a peer (a connection reset, closed or "
            f"refused, a work completion in error): printed by survivors, collateral of {who}"]
