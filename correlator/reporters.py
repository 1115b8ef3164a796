"""A rank that reported another's failure and then went away: its loss is the report's consequence. Pure.

Some reports are printed by one rank about another: PyTorch's monitored barrier runs on rank 0 and raises there
naming the ranks that did not arrive (ProcessGroupGloo.cpp monitoredBarrier: "Rank %d failed to pass
monitoredBarrier in %d ms", "Ranks %s failed to pass ..."), and the desync report does the same for a collective.
The reporter raises, its process exits, and every rank connected to it then loses it (Gloo's "Connection closed
by peer [addr]", NCCL's socket errors): many ranks on many hosts "losing" the reporter, which would weigh as
blame on it. That loss follows from the report: the survivors' lines about the reporter point at no one, so the
named rank, not its messenger, is the suspect. A report naming most of the job is not used so: that is rather
the reporter cut off from everyone (its own link), and the others' loss of it stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import attrgetter, is_

from correlator.events import Event, Target
from correlator.exits import exit_report
from correlator.identity import IdentityMap
from correlator.members import IMPLICATES_NAMED, IMPLICATES_PEER, ROLE_INITIATING

_IMPLICATES = attrgetter("signature.implicates")
MOST_OF = 0.5  # a report naming this share of the ranks seen or more is no report about a few ranks


def spare_messengers(failures: Sequence[Event], ranks_seen: int, ids: IdentityMap) -> int:
    """Drop the reporters of a few-rank NAMED report from the targets of others' peer errors; how many errors."""
    messengers: set[Target] = set()
    # the events of NAMED entries alone, picked in C (a few reports among every rank's timeouts and resets)
    for ev in compress(failures, map(is_, map(_IMPLICATES, failures), repeat(IMPLICATES_NAMED))):
        named = [t for t in ev.implicated if t != ev.reporter]
        if (ev.signature.implicates is IMPLICATES_NAMED and ev.role is ROLE_INITIATING and ev.weight is None
                and not ev.stale and not exit_report(ev) and ev.reporter.rank is not None and named
                and len(named) < MOST_OF * max(ranks_seen, 1)):
            messengers.add(ev.reporter)
    spared = 0
    if not messengers:  # no target is anyone's messenger: every peer error keeps its targets
        return spared
    for ev in failures:
        if not (ev.signature.implicates is IMPLICATES_PEER or ev.about_peer):
            continue
        kept = [t for t in ev.implicated if not any(_is(t, m, ids) for m in messengers)]
        if len(kept) != len(ev.implicated):
            ev.implicated, spared = kept, spared + 1
    return spared


def _is(target: Target, messenger: Target, ids: IdentityMap) -> bool:
    """A peer error's target is the messenger: its rank, or (an address mapped to a host only) its host, by the
    name its speaker gave or the one the rank's init lines give."""
    if target.rank is not None:
        return target.rank == messenger.rank
    hosts = {messenger.host, ids.host_of_rank.get(messenger.rank) if messenger.rank is not None else None}
    return target.host is not None and target.host in hosts
