"""Ranks placed by the job's hostfile: `host slots=N` lines, filled in order. Pure.

Open MPI's hostfile lists one host a line with its slots ("node01 slots=8"; docs.open-mpi.org launching-apps/
scheduling.rst: by slot is the default scheduling policy, each host's slots filled before the next host's, in the
hostfile's order), and MPI_COMM_WORLD ranks are numbered in that order: the first host's slots hold ranks 0..N-1.
DeepSpeed's hostfile has the same form ("worker-1 slots=4", deepspeed/launcher/runner.py fetch_hostfile) and its
launcher numbers global ranks host by host in the same order (launcher/launch.py, global_rank_mapping). A rank no
line places (a tag-output line "[1,7]<stderr>:" names the rank, never the host) is on its slot's host. With
"--map-by node" on the mpirun line (mpirun(1)), ranks are dealt one a host in turn instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from operator import attrgetter

from correlator.kept import ContextRecord

_LINE = attrgetter("line_no")


# mpirun's mapping options (mpirun(1), --map-by): by node deals ranks round-robin across the hosts ("-bynode",
# "--map-by node"); by slot, core, socket, NUMA or hardware thread fills each host's slots first; anything else
# (ppr, -npernode, a rankfile, seq) places them in ways the hostfile alone does not say
_BY_NODE = re.compile(r"(?:--?map-by[ \t=]+node\b|--?bynode\b)")
_FILLING = re.compile(r"--?map-by[ \t=]+(?:slot|core|socket|package|numa|hwthread|l[123]cache)\b")
_OTHER = re.compile(r"--?(?:map-by|npernode|npersocket|N|rankfile|rf)\b|\bppr:")


def slot_hosts(of_kind: Mapping[str, Sequence[ContextRecord]]) -> dict[int, str]:
    """rank -> host by the hostfile's slots, where one file lists them (several would be several jobs' or
    several steps'); a host listed twice lists no order to trust. The mpirun line, where the logs hold it, says
    whether ranks fill hosts or are dealt across them."""
    lines = of_kind.get("hostfile_slots", ())
    if not lines or len({rec.source for rec in lines}) != 1:
        return {}
    hosts = [(str(rec.fields["host"]), int(rec.fields["slots"])) for rec in sorted(lines, key=_LINE)]
    if len({host for host, _ in hosts}) != len(hosts):
        return {}
    commands = [str(rec.fields.get("args") or "") for rec in of_kind.get("mpirun_command", ())]
    by_node = any(_BY_NODE.search(c) for c in commands)
    if any(_OTHER.search(_FILLING.sub("", _BY_NODE.sub("", c))) for c in commands):
        return {}
    return _dealt(hosts) if by_node else _filled(hosts)


def _filled(hosts: Sequence[tuple[str, int]]) -> dict[int, str]:
    out: dict[int, str] = {}
    for host, slots in hosts:
        out.update(dict.fromkeys(range(len(out), len(out) + slots), host))
    return out


def _dealt(hosts: Sequence[tuple[str, int]]) -> dict[int, str]:
    """Round-robin by node, a host whose slots are taken skipped."""
    left = dict(hosts)
    out: dict[int, str] = {}
    while any(left.values()):
        for host, _ in hosts:
            if left[host]:
                out[len(out)] = host
                left[host] -= 1
    return out
