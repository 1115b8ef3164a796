"""A job-wide fault that only one rank printed, while the other ranks failed otherwise. Pure.

A catalog entry of the job's scope (a configuration every rank shares) names nobody when every rank shows it. Some
of them can only ever show on one process: the TCPStore that env:// and tcp:// rendezvous serve is started by rank
0 alone (torch/distributed/rendezvous.py, _create_c10d_store: `start_daemon = rank == 0`), so a port already in use
(`The server socket has failed to bind ... Address already in use`, torch/csrc/distributed/c10d/socket.cpp) is
printed by rank 0 while the other ranks print that they cannot connect to it. When one rank alone printed the
job-wide line and other ranks printed failures of their own kind, the fault showed where that rank runs: it is
named, not the whole job.
"""

from __future__ import annotations

from collections.abc import Sequence

from correlator.events import Event


def lone_rank(root: Event, failures: Sequence[Event], rank: int) -> bool:
    """Whether ``rank`` alone printed ``root``'s signature while other ranks failed with other lines. Lines placed on
    no rank (a traceback's last line) say nothing about whose they are and are not counted; where no line of it is
    placed at all (pods' or nodes' logs without rank prefixes), who printed it is not known: not this rule's."""
    printed = {ev.reporter.rank for ev in failures if ev.signature.id == root.signature.id}
    if printed - {None} != {rank}:
        return False
    return bool({ev.reporter.rank for ev in failures if ev.signature.id != root.signature.id} - {None, rank})
