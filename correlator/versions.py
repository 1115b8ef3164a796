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
from correlator.identity import IdentityMap

_RELEASE = re.compile(r"NCCL version (\d+)\.(\d+)\.(\d+)")
_CHECK = re.compile(r"rank (\d+) version (\d+) rank (\d+) version (\d+)")


def _code(major: str, minor: str, patch: str) -> int:
    return int(major) * 10000 + int(minor) * 100 + int(patch)


def odd_version_hosts(failures: Sequence[Event], ids: IdentityMap) -> set[str]:
    """The hosts running the release fewer hosts run, where one release is strictly the rarest; else empty."""
    hosts_of: dict[int, set[str]] = {}
    for ev in failures:
        for f in ev.findings:
            host = f.speaker.host or ev.reporter.host
            if host and (m := _RELEASE.search(f.text)):
                hosts_of.setdefault(_code(*m.groups()), set()).add(host)
            if m := _CHECK.search(f.text):
                for rank, code in ((m[1], m[2]), (m[3], m[4])):
                    if (peer := ids.host_of_rank.get(int(rank))) is not None:
                        hosts_of.setdefault(int(code), set()).add(peer)
    if len(hosts_of) < 2 or any(len(a & b) for a in hosts_of.values() for b in hosts_of.values() if a is not b):
        return set()  # one release, or a host under two: nothing to tell apart
    sizes = sorted(len(h) for h in hosts_of.values())
    if sizes[0] == sizes[1]:
        return set()
    return min(hosts_of.values(), key=len)
