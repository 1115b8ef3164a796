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

import re
from collections.abc import Iterable, Sequence

from catalog.model import Category, Implicates, Scope
from correlator.events import Event, Target
from correlator.exits import cause_like
from correlator.identity import IdentityMap
from schemas.findings import Role

# strerror(3) texts of a connection the peer ended, and NCCL's own words for it
_GONE = ("Connection reset by peer", "Connection closed by remote peer", "Software caused connection abort",
         "Broken pipe", "remote process exited or there was a network error")
# connect(2) errors that say the peer could not be reached: it is down, or nothing listens there. Not
# "Network is unreachable" (ENETUNREACH): the caller has no route to that network, its own configuration.
_UNREACHABLE = ("No route to host", "Connection refused", "Connection timed out", "Host is down")
_CONNECT = re.compile(r"[Cc]onnect to (?P<peer>[^\s<]+)(?:<\d+>)? (?:failed ?: ?|returned )(?P<why>[^\n]*)")
_MIN_PREFIX = 8  # a strerror text cut short (a pasted excerpt) still names its errno when this much is left


def _says(text: str, phrases: Sequence[str]) -> bool:
    """One of the phrases is in the text, or the text ends in one cut short ("... failed : No route to")."""
    if any(p in text for p in phrases):
        return True
    tail = text.rstrip()
    return any(tail.endswith(p[:n]) for p in phrases for n in range(_MIN_PREFIX, len(p)))


def _socket_peer(ev: Event) -> tuple[bool, str | None] | None:
    """(whether this is a socket error about a peer, the peer's address if the line names one)."""
    sig, f = ev.signature, ev.best
    peer = f.fields.get("peer") if isinstance(f.fields.get("peer"), str) else None
    connect = _CONNECT.search(f.text)
    if connect is not None and _says(connect["why"], _UNREACHABLE + _GONE):
        return True, str(peer or connect["peer"])
    about_peer = sig.implicates is Implicates.PEER and sig.category is Category.COMMUNICATION
    if about_peer and "status" not in f.fields and (connect is None or _says(connect["why"], _UNREACHABLE + _GONE)):
        return True, str(peer) if peer else None
    if "nccl" in sig.tags and _says(f.text, _GONE):
        return True, str(peer) if peer else None
    return None


def _ib_link(ev: Event) -> bool:
    """An InfiniBand work completion in error (its entry captures the completion status)."""
    return ev.signature.implicates is Implicates.PEER and "status" in ev.best.fields


def _own_evidence(events: Iterable[Event], transport: set[int]) -> set[tuple[Target, bool]]:
    """Whoever has a fault of its own, and whether the fault is its node's: a specific cause-like line (or a
    generic one outside communication, a Python exception), not a result code wrapping a cause printed
    elsewhere, not another transport error."""
    out: set[tuple[Target, bool]] = set()
    for ev in events:
        sig = ev.signature
        if id(ev) in transport or not cause_like(ev) or sig.wrapper or ev.about_peer:
            continue
        if sig.generic and sig.category is Category.COMMUNICATION:
            continue  # an NCCL WARN no entry knows may be one more transport error
        if sig.implicates is Implicates.SELF or sig.implicates is Implicates.NAMED:
            node = sig.scope is Scope.NODE
            out.update((t, node) for t in ev.implicated if t.rank is not None or t.host is not None)
    return out


def _elsewhere(owner: Target, node: bool, reporter: Target) -> bool:
    """The fault is another process's (or, for a node's fault, another host's) than the reporter's."""
    if owner.rank is not None and reporter.rank is not None and not node:
        return owner.rank != reporter.rank
    return owner.host is not None and reporter.host is not None and owner.host != reporter.host


def _point_at(ev: Event, peer: str, ids: IdentityMap) -> None:
    host = ids.host_of(peer)
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
        if ev.role is Role.CONTEXT or ev.stale or ev.weight is not None:
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
    for ev in events:
        if id(ev) not in sockets and ev not in links:
            continue
        elsewhere = any(_elsewhere(owner, node, ev.reporter) for owner, node in owners)
        peer = sockets.get(id(ev))
        if id(ev) in sockets and ev.signature.implicates is not Implicates.PEER:
            ev.about_peer = True  # about its peer, named or not: never the reporter's own fault
            if peer is None:
                ev.implicated = []
            else:
                _point_at(ev, peer, ids)
        if id(ev) in sockets or elsewhere:
            if ev.role is not Role.COLLATERAL:
                demoted.add(ev.reporter)
            ev.role, ev.survivor = Role.COLLATERAL, True
        if id(ev) in sockets and not owners and ev.unmapped_peer is not None and not ev.implicated:
            ev.implicated = [Target(None, ev.unmapped_peer)]  # the peer no log names: its address is the lead
    if not demoted:
        return []
    who = "a fault of its own elsewhere" if owners else "the peer they name"
    return [f"{len(demoted)} rank(s)/host(s) report transport errors about a peer (a connection reset, closed or "
            f"refused, a work completion in error): printed by survivors, collateral of {who}"]
