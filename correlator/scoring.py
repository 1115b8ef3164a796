"""Weighing evidence for each suspect. Every weight is named here, and every contribution leaves a reason."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from catalog.model import Implicates, Scope
from correlator.differential import Suspect
from correlator.events import Event, Target, victims_only
from correlator.exits import DEATH_CODES, exit_report, first_failures, task_exits
from correlator.folding import fold_hosts_into_ranks, fold_job_into_located, named_first
from correlator.identity import ExitRecord, IdentityMap
from correlator.members import IMPLICATES_NAMED, IMPLICATES_PEER, IMPLICATES_SELF, ROLE_COLLATERAL, ROLE_CONTEXT
from schemas.findings import Role

W_ROLE = {Role.INITIATING: 3.0, Role.EITHER: 1.5, Role.COLLATERAL: 0.1, Role.CONTEXT: 0.0}
# By value: a Severity (a StrEnum) looks its own up, without the enum's `.value` (a Python-level property).
W_SEVERITY = {"critical": 1.3, "error": 1.0, "warning": 0.45, "info": 0.15}
W_GENERIC = 0.3  # a catch-all match says little about the cause
W_WRAPPER = 0.4  # a result code wrapping a cause printed elsewhere
W_NAMED = 4.0  # a desync report or barrier naming the rank is computed from every rank's counters
W_MAIN = 1.5  # ranks parked where only the main process (rank 0) goes on: it is absent from their tracebacks
W_PEER_HOST = 0.9  # each distinct host whose ranks lost their connection to this peer
W_PEER_RANK = 0.15  # and each distinct rank among them
W_PEER_CAP = 4.5
W_STORE_CLIENT = 0.3  # each rank whose TCPStore client lost the store this host served
W_STORE_CAP = 2.5
W_ODD_INTERFACE = 2.5  # NCCL on this host uses another interface than on most hosts
W_UNREACHABLE_PEER = 1.2  # each host that could not reach this one, when this one's interface is the odd one out
# collective sequence numbers (collectives.py); absent: an inference from a rank's silence in one collective
W_LAG = {"status": 3.0, "flight_recorder": 3.5, "mismatch": 3.5, "absent": 2.0}
W_SILENT = 1.2  # its log arrived, yet it alone printed nothing when every other rank reported the failure
SILENT_SHARE = 0.02  # more silent ranks than this and silence is a logging gap, not a clue
W_UNIQUE_ERRORS = 1.5  # error lines no other rank printed, before the cascade (differential.py)
W_UNMAPPED_PEER_SELF = 0.8  # a peer error whose peer is in no log here: the reporter is the best lead left
W_EXIT = {-9: 2.5, 137: 2.5, -11: 2.5, 139: 2.5, -4: 2.5, 132: 2.5, -7: 2.2, 135: 2.2, -6: 0.8, 134: 0.8, 1: 0.6}
W_EXIT_TEARDOWN = {-15, 143, 15, -2, 130}
W_EXIT_ABORT = {-6, 134}
W_EXIT_COMMON = 0.3  # an exit code a third of the job shares does not single anyone out
W_EXIT_COMMON_SHARE = 1 / 3  # SIGABRT: what the NCCL watchdog does to its own process after a timeout
W_EARLIEST = 0.5
W_FIRST_FAILURE = 0.7  # torchrun's own pick of the earliest failed worker: above a same-second exit code 1
W_FIRST_FAILURE_TIED = 0.1  # its pick among rows of one second (failure_tables.ExitRecord.tied_first): an order
W_EARLIER_CAUSE = 2.0  # two candidates with causes of their own: independent failures, the first started it
SKEW_TOLERANCE = timedelta(seconds=2)
EARLIER_CAUSE = "failed too, by a cause of its own"  # the reason W_EARLIER_CAUSE leaves (calibration reads it)


@dataclass(slots=True)  # one a rank: no dict each (issue 23)
class Candidate:
    target: Target
    score: float = 0.0
    reasons: list[str] = field(default_factory=list)
    own_events: list[Event] = field(default_factory=list)
    support_events: list[Event] = field(default_factory=list)  # others' lines that point at it
    first_time: datetime | None = None
    own_fault: bool = False  # something of its own counts: a cause-like line, an exit code, a lag
    death: bool = False  # its exit code says it was killed or crashed, which no other rank shares
    exited: bool = False  # an exit code speaks for it
    unique: Suspect | None = None  # its error lines no other rank printed (differential.py)

    def add(self, weight: float, reason: str, own: bool = True) -> None:
        self.score += weight
        self.own_fault = self.own_fault or own
        self.reasons.append(f"{reason} (+{weight:.1f})")

    def best_event(self) -> Event | None:
        mine = {ev.signature.id for ev in self.own_events}  # a line leading to one of these yields (`yields_to`)
        def key(ev: Event) -> tuple[int, int, int, int, float, bool, bool, bool, int]:
            # an absence from a collective only shows that something happened to it: any line of its own says what;
            # and how it ended (an exit code, a signal: `failed (exitcode: -9)`) says less than who ended it (the
            # OOM killer's `Killed process <pid>`) or why; a code with a class of its own, more than a report
            code = "exit_code" in ev.best.fields or "signal" in ev.best.fields
            says = 0 if exit_report(ev) else 1 if ev.absence else 2 if code else 3
            # A wrapper (torch's `NCCL error in: ..., invalid usage`) says less than the NCCL line it wraps; what a
            # process says of itself, more than others' report naming it (a lost task's own OOM, not the heartbeat
            # report), even where no entry knows what it said (its own exception: the report only says that it
            # stopped), though not where its own line is a victim's (a desync report says more than the straggler's
            # own abort); and the node under a process fails first (Xid 79 explains the rank's CUDA error).
            told = ev.signature.implicates is Implicates.NAMED or ev.role is Role.COLLATERAL
            return (says, 0 if told else 1, 0 if ev.best.generic else 1, 0 if ev.signature.wrapper else 1,
                    W_ROLE[ev.role] * W_SEVERITY[ev.signature.severity], ev.signature.implicates is Implicates.SELF,
                    ev.signature.scope is Scope.NODE, mine.isdisjoint(ev.signature.yields_to), -ev.best.order)
        if self.own_events and not victims_only(self.own_events, self.support_events):
            return max(self.own_events, key=key)
        return min(self.support_events, key=lambda ev: ev.best.order) if self.support_events else None


class Board:
    """The suspects, keyed by rank when known (the rank itself: no key tuple a rank), else by ("host", host)."""

    def __init__(self) -> None:
        self.by_key: dict[int | tuple[str, str | None], Candidate] = {}

    def get(self, target: Target) -> Candidate:
        key = target.rank if target.rank is not None else ("host", target.host)
        cand = self.by_key.get(key)
        if cand is None:
            cand = self.by_key[key] = Candidate(target)
        elif cand.target.host is None and target.host is not None:
            cand.target = Target(cand.target.rank, target.host)
        return cand

    def ranked(self) -> list[Candidate]:
        return sorted(self.by_key.values(), key=lambda c: -c.score)


def _own_fault(board: Board, events: list[Event]) -> None:
    # signature -> ids of the candidates weighed for it: a (candidate, signature) tuple each was this step's peak
    seen: dict[str, set[int]] = defaultdict(set)
    for ev in events:
        if (ev.role is ROLE_CONTEXT or ev.stale or not ev.implicated or ev.about_peer
                or ev.signature.implicates is not IMPLICATES_SELF):
            continue
        for target in ev.implicated:
            cand = board.get(target)
            cand.own_events.append(ev)
            weighed = seen[ev.signature.id]
            if id(cand) in weighed:
                continue  # the same fault printed again on the same rank is not new evidence
            weighed.add(id(cand))
            if exit_report(ev) or ev.weight == 0:
                continue
            weight = W_ROLE[ev.role] * W_SEVERITY[ev.signature.severity]
            weight *= W_GENERIC if ev.best.generic else 1.0
            weight *= W_WRAPPER if ev.signature.wrapper else 1.0
            if weight > 0:
                cand.add(weight, f"{ev.role} `{ev.signature.id}` at {ev.best.source}:{ev.best.line_no}",
                         own=ev.role is not ROLE_COLLATERAL)


def _blame(board: Board, events: list[Event]) -> None:
    peer_reporters: dict[Target, set[Target]] = defaultdict(set)
    waited_on: set[tuple[Target, str]] = set()
    for ev in events:
        if ev.stale:
            continue
        implicates = ev.signature.implicates
        if ev.waits_on is not None:
            target, line = ev.waits_on
            board.get(target).support_events.append(ev)
            if (target, line.signature) not in waited_on:  # an inference from absence: once, however many
                waited_on.add((target, line.signature))
                board.get(target).add(W_MAIN, f"the main process the `{line.signature}` lines wait on (first at "
                                              f"{line.source}:{line.line_no})", own=False)
        if implicates is IMPLICATES_NAMED:
            for target in ev.implicated:
                cand = board.get(target)
                cand.own_events.append(ev)
                if exit_report(ev):
                    continue  # srun naming a task that exited: its exit code is weighed by _exits, not as blame
                if ev.reason is not None and ev.weight is not None:
                    where = f"{ev.best.source}:{ev.best.line_no}" if ev.best.line_no else ev.best.source
                    cand.add(ev.weight, f"{ev.reason} ({where})")
                else:
                    cand.add(W_NAMED, f"named by `{ev.signature.id}` at {ev.best.source}:{ev.best.line_no}")
        elif implicates is IMPLICATES_PEER or ev.about_peer:
            if ev.unmapped_peer is not None:
                cand = board.get(ev.reporter)
                cand.own_events.append(ev)
                if ev.role is not ROLE_COLLATERAL:
                    cand.add(W_UNMAPPED_PEER_SELF * W_ROLE[ev.role],
                             f"`{ev.signature.id}` with peer {ev.unmapped_peer}, which no log here maps to a host")
            for target in ev.implicated:
                peer_reporters[target].add(ev.reporter)
                board.get(target).support_events.append(ev)
    _peer_blame(board, peer_reporters)


def _peer_blame(board: Board, peer_reporters: dict[Target, set[Target]]) -> None:
    """Each peer named by survivors' transport errors, by how many hosts and ranks lost it. A host whose own NIC
    or link fails loses every peer it talks to, so its ranks name healthy hosts too: a host named only by one
    other host, which ranks on two or more other hosts name, is that host's view, not a suspect of its own."""
    accusers: dict[str, set[str]] = defaultdict(set)  # host -> the other hosts whose ranks lost it
    for target, reporters in peer_reporters.items():
        if target.host is not None:
            accusers[target.host] |= {r.host for r in reporters if r.host is not None and r.host != target.host}
    for target, reporters in peer_reporters.items():
        others = {r.host for r in reporters if r.host != target.host}
        if len(others) == 1 and len(accusers.get(str(next(iter(others))), ())) >= 2:
            continue  # only a host that many others lost names it
        weight = min(W_PEER_CAP, W_PEER_HOST * max(1, len(others)) + W_PEER_RANK * len(reporters))
        where = f"on {len(others)} other host(s)" if others else "on its own host"
        board.get(target).add(weight, f"{len(reporters)} rank(s) {where} lost their connection to it", own=False)


def _exits(board: Board, ids: IdentityMap, events: list[Event], records: list[ExitRecord]) -> None:
    """``records``: the identity map's exits (torchrun's tables and agent lines, the job's metadata) and srun's."""
    codes = [e.exit_code for e in records]
    if not codes:
        return
    by_code: dict[int, set[object]] = defaultdict(set)  # who exited with each code, each rank or host once
    for e in records:
        by_code[e.exit_code].add(e.rank if e.rank is not None else e.host)
    who = set().union(*by_code.values())
    timed_out = {ev.reporter.rank for ev in events if ev.role is Role.COLLATERAL and ev.reporter.rank is not None}
    seen: set[tuple[int | None, str | None, int]] = set()
    for rec in records:
        weight = W_EXIT.get(rec.exit_code)
        if (weight is None or rec.exit_code in W_EXIT_TEARDOWN or rec.after_first
                or (rec.rank, rec.host, rec.exit_code) in seen):
            continue
        seen.add((rec.rank, rec.host, rec.exit_code))
        if rec.exit_code in W_EXIT_ABORT and rec.rank in timed_out:
            continue  # its own watchdog aborted it after a collective failed: a consequence
        others = sum(1 for c in codes if c != rec.exit_code)
        lone = " while the others were torn down" if others else ""
        sharing = len(by_code[rec.exit_code])
        common = sharing >= 3 and sharing > len(who) * W_EXIT_COMMON_SHARE
        if common:
            weight *= W_EXIT_COMMON
            lone = f", as for {sharing} ranks/hosts: it says little"
        target = Target(rec.rank, rec.host if rec.rank is None else ids.host_of_rank.get(rec.rank, rec.host))
        where = rec.source if rec.line_no == 0 else f"{rec.source}:{rec.line_no}"
        cand = board.get(target)
        cand.add(weight, f"exit code {rec.exit_code}{lone} ({where})", own=not common)
        cand.death = cand.death or (rec.exit_code in DEATH_CODES and not common)
        cand.exited = True


def _earliest(board: Board, offsets: dict[str | None, timedelta]) -> None:
    contenders = [c for c in board.ranked() if c.score > 0]
    if len(contenders) < 2:
        return
    top = contenders[0].score
    close = [c for c in contenders if c.score >= 0.8 * top or _has_cause(c)]
    timed = []
    for cand in close:
        timed_events = [ev for ev in cand.own_events if ev.best.time is not None and ev.best.clock == "wall"]
        # A launcher's report is when it noticed, not when the fault happened: only when nothing else has a clock.
        own = [ev for ev in timed_events if not exit_report(ev)] or timed_events
        times = [ev.best.time - offsets.get(ev.reporter.host, timedelta(0)) for ev in own
                 if ev.best.time and _clock_known(ev.reporter.host, offsets)]
        if times:
            cand.first_time = min(times)
            timed.append(cand)
    if len(timed) < 2:
        return
    timed.sort(key=lambda c: c.first_time or datetime.max)
    first, second = timed[0], timed[1]
    if first.first_time and second.first_time and second.first_time - first.first_time > SKEW_TOLERANCE:
        if _has_cause(first) and _has_cause(second):
            gap = (second.first_time - first.first_time).total_seconds()
            first.add(W_EARLIER_CAUSE, f"{second.target.label} {EARLIER_CAUSE}, {gap:.0f} s "
                      "later (clocks corrected): independent failures, and this one came first")
        else:
            first.add(W_EARLIEST, "its first fault is the earliest, after correcting per-host clock offsets")


def _clock_known(host: str | None, offsets: dict[str | None, timedelta]) -> bool:
    """A host's clock can be set against the others': its offset was estimated, or no host's clock is known to be
    off. Where the job's clocks disagree (an estimated offset beyond SKEW_TOLERANCE), a host with no estimate (a
    node's kernel log whose name no console links, a host that printed no collective's failure) keeps an unknown
    skew: its raw time set against the others' corrected ones would order two hosts' faults by that skew alone."""
    return host in offsets or all(abs(o) <= SKEW_TOLERANCE for o in offsets.values())


def _has_cause(cand: Candidate) -> bool:
    """A specific catalog entry whose role is initiating, on its own lines: a cause, not a reaction."""
    return any(ev.role is Role.INITIATING and not ev.best.generic and not exit_report(ev) and ev.weight is None
               and not ev.stale for ev in cand.own_events)


def _store_owner(board: Board, ids: IdentityMap, events: list[Event]) -> None:
    """TCPStore clients that lost the store name its host: the store's owner (rank 0's process) went away."""
    if not ids.store_hosts:
        return
    at = {(f.source, f.line_no): ev for ev in events for f in ev.findings}
    reporters: dict[str, set[object]] = defaultdict(set)
    lines: dict[str, list[Event]] = defaultdict(list)
    for name, rec in ids.store_hosts:
        host = ids.host_of(name) or name
        reporters[host].add(rec.who.rank if rec.who.rank is not None else rec.source)
        if (ev := at.get((rec.source, rec.line_no))) is not None:
            lines[host].append(ev)
    for host, seen in reporters.items():
        weight = min(W_STORE_CAP, W_STORE_CLIENT * len(seen))
        # env:// and torchrun's static rendezvous serve the store from rank 0's process, on MASTER_ADDR.
        owner = board.get(Target(0, host) if ids.host_of_rank.get(0) == host else Target(None, host))
        owner.support_events += lines[host]
        owner.add(weight, f"{len(seen)} TCPStore client(s) lost the store it served", own=False)


def _subnet(ids: IdentityMap, host: str | None) -> set[str]:
    if host is None:
        return set()
    return {ip.rsplit(".", 2)[0] for ip in ids.host_of_ip.keys_on(host) if ip.count(".") == 3}


def _odd_interfaces(board: Board, events: list[Event], ids: IdentityMap) -> None:
    """A host whose NCCL interface differs from the rest, or whose advertised address is on another network than
    its callers', and that others could not reach: that host is misconfigured, not the callers."""
    odd = ids.odd_interface_hosts()
    for odd_host, (usual, count) in odd.items():
        board.get(Target(None, odd_host)).add(W_ODD_INTERFACE, f"NCCL uses "
                                              f"{','.join(sorted(ids.interfaces[odd_host]))} here where {count} "
                                              f"hosts use {usual}")
    callers: dict[str, set[str | None]] = defaultdict(set)
    for ev in events:
        peer = ev.best.fields.get("peer")
        host = ids.host_of(peer) if isinstance(peer, str) and ev.signature.scope is Scope.JOB else None
        if host is None or host == ev.reporter.host:
            continue
        theirs, mine = _subnet(ids, host), _subnet(ids, ev.reporter.host)
        if host in odd or (theirs and mine and not theirs & mine):
            callers[host].add(ev.reporter.host)
            board.get(Target(None, host)).support_events.append(ev)
            ev.weight = 0.0  # the caller's failure to reach it is this host's fault, not the caller's
    for host, seen in callers.items():
        board.get(Target(None, host)).add(W_UNREACHABLE_PEER * len(seen), f"{len(seen)} host(s) could not reach it "
                                          "at the address it advertised, on another network than theirs")


def _unique_errors(board: Board, suspect: Suspect, ids: IdentityMap) -> None:
    """The differential view's suspect: error lines that no other rank printed, before the cascade."""
    host = suspect.host or (ids.host_of_rank.get(suspect.rank) if suspect.rank is not None else None)
    cand = board.get(Target(suspect.rank, host))
    cand.unique = suspect
    cand.add(W_UNIQUE_ERRORS, f"{len(suspect.lines)} error line(s) no other rank or host printed, before the "
             f"cascade (first: {suspect.lines[0].text[:100]!r})")


def _silent(board: Board, events: list[Event], ids: IdentityMap, logged: set[int]) -> None:
    """A rank whose process hung or vanished often prints nothing at all: the one rank missing from the wave."""
    reporting = {ev.reporter.rank for ev in events if ev.reporter.rank is not None and not ev.stale}
    silent = logged - reporting
    if len(reporting) < 3 or not silent or len(silent) > max(1, SILENT_SHARE * len(logged)):
        return
    for rank in sorted(silent):
        # own=False: silence alone does not claim a host's fault (an Xid whose PCI address no NCCL line maps).
        board.get(Target(rank, ids.host_of_rank.get(rank))).add(
            W_SILENT, f"its log arrived but it printed nothing while {len(reporting)} ranks reported the failure",
            own=False)


def score(events: list[Event], ids: IdentityMap, offsets: dict[str | None, timedelta],
          suspect: Suspect | None = None, logged: set[int] | None = None) -> list[Candidate]:
    board = Board()
    _odd_interfaces(board, events, ids)
    _own_fault(board, events)
    _blame(board, events)
    _store_owner(board, ids, events)
    _exits(board, ids, events, ids.exits + task_exits(events, ids))
    for target, reason, tied in first_failures(ids, events):
        board.get(target).add(W_FIRST_FAILURE_TIED if tied else W_FIRST_FAILURE, reason, own=True)
    if suspect is not None and suspect.unique and suspect.lines:
        _unique_errors(board, suspect, ids)
    _silent(board, events, ids, logged or set())
    fold_hosts_into_ranks(board)
    fold_job_into_located(board, named_first(ids))
    _earliest(board, offsets)
    return [c for c in board.ranked() if c.score > 0]


def confidence(ranked: list[Candidate], generic: bool) -> float:
    if not ranked:
        return 0.0
    top = ranked[0].score
    second = ranked[1].score if len(ranked) > 1 else 0.0
    margin = (top - second) / (top + 1.0)
    strength = 1 - math.exp(-top / 3.0)
    value = 0.2 + 0.45 * strength + 0.35 * margin
    return round(min(0.4 if generic else 0.97, value), 2)
