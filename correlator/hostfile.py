"""Ranks placed by the job's hostfile: `host slots=N` lines, filled in order. Pure.

Open MPI's hostfile lists one host a line with its slots ("node01 slots=8"; docs.open-mpi.org launching-apps/
scheduling.rst: by slot is the default scheduling policy, each host's slots filled before the next host's, in the
hostfile's order), and MPI_COMM_WORLD ranks are numbered in that order: the first host's slots hold ranks 0..N-1.
DeepSpeed's hostfile has the same form ("worker-1 slots=4", deepspeed/launcher/runner.py fetch_hostfile) and its
launcher numbers global ranks host by host in the same order (launcher/launch.py, global_rank_mapping). A rank no
line places (a tag-output line "[1,7]<stderr>:" names the rank, never the host) is on its slot's host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from correlator.kept import ContextRecord


def slot_hosts(of_kind: Mapping[str, Sequence[ContextRecord]]) -> dict[int, str]:
    """rank -> host by the hostfile's slots, where one file lists them (several would be several jobs' or
    several steps'); a host listed twice lists no order to trust."""
    lines = of_kind.get("hostfile_slots", ())
    if not lines or len({rec.source for rec in lines}) != 1:
        return {}
    hosts = [(rec.line_no, str(rec.fields["host"]), int(rec.fields["slots"])) for rec in lines]
    if len({host for _, host, _ in hosts}) != len(hosts):
        return {}
    out: dict[int, str] = {}
    for _, host, slots in sorted(hosts):
        out.update(dict.fromkeys(range(len(out), len(out) + slots), host))
    return out
