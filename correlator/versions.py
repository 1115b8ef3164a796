"""The node whose NCCL differs: when ranks run different NCCL releases, the release fewer hosts run is the odd
one out, and so are its hosts. Pure.

NCCL prints its release in its banner and in every error torch raises from it (`NCCL version 2.19.3`), and its
version check names both sides as codes (NVIDIA/nccl src/init.cc, initTransportsRank: "Mismatched NCCL version
detected : rank %d version %d rank %d version %d", each rank against every peer; NCCL_VERSION_CODE is
major * 10000 + minor * 100 + patch since 2.9). Every rank prints that line, so the line alone blames no one; the
count of hosts per release does, once a job spans three hosts or more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from correlator.events import Event
from correlator.exits import task_exits
from correlator.identity import IdentityMap

_RELEASE = re.compile(r"NCCL version (\d+)\.(\d+)\.(\d+)")
_CHECK = re.compile(r"rank (\d+) version (\d+) rank (\d+) version (\d+)")


def _code(major: str, minor: str, patch: str) -> int:
    return int(major) * 10000 + int(minor) * 100 + int(patch)


def _hosts_of_ranks(failures: Sequence[Event], ids: IdentityMap) -> dict[int, str]:
    """rank -> host from the identity map, the launchers' exit reports, and the failing lines whose speaker names
    both (an srun -l task label before an NCCL header): the version check's lines are often the only lines that
    do."""
    found: dict[int, str] = {}
    for rec in (*ids.exits, *task_exits(failures, ids)):  # srun's `HOST: tasks 48-55: Exited ...` without torchrun
        if rec.rank is not None and rec.host is not None:
            found.setdefault(rec.rank, rec.host)
    for ev in failures:
        for f in ev.findings:
            if f.speaker.rank is not None and f.speaker.host is not None:
                found.setdefault(f.speaker.rank, f.speaker.host)
    found.update(ids.host_of_rank.items())
    return found


def odd_version_hosts(failures: Sequence[Event], ids: IdentityMap) -> set[str]:
    """The hosts running the release fewer hosts run, where one release is strictly the rarest; else empty."""
    host_of_rank = _hosts_of_ranks(failures, ids)
    hosts_of: dict[int, set[str]] = {}
    for ev in failures:
        for f in ev.findings:
            own = f.speaker.host or ev.reporter.host
            if own is None and f.speaker.rank is not None:
                own = host_of_rank.get(f.speaker.rank)
            if own and (m := _RELEASE.search(f.text)):
                hosts_of.setdefault(_code(*m.groups()), set()).add(own)
            if m := _CHECK.search(f.text):
                # the peer first, the printer second (init.cc: WARN(..., i, peerInfo[i].version, rank, ...))
                if own:
                    hosts_of.setdefault(int(m[4]), set()).add(own)
                for rank, code in ((m[1], m[2]), (m[3], m[4])):
                    if (peer := host_of_rank.get(int(rank))) is not None:
                        hosts_of.setdefault(int(code), set()).add(peer)
    if len(hosts_of) < 2 or any(len(a & b) for a in hosts_of.values() for b in hosts_of.values() if a is not b):
        return set()  # one release, or a host under two: nothing to tell apart
    sizes = sorted(len(h) for h in hosts_of.values())
    if sizes[0] == sizes[1]:
        return set()
    return min(hosts_of.values(), key=len)
