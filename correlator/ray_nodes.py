"""Ray's names of its nodes: the address Ray knows a node by is the scheduler's name of it. Pure.

Ray prefixes a worker's lines with its node's address (python/ray/_private/worker.py, print_worker_logs:
"({name} pid=N, ip=A) "): Ray knows, lists (`ray status`, `ray list nodes`) and reports its nodes by that address,
so it is the scheduler's name of the node, as Slurm's is its host name; NCCL's header beside it is gethostname's.
Ray names a node by the same address where it lists or buries one: Ray Train's worker table ("- (node_id=..,
ip={node_ip}, pid=..) world_rank=..": ray/train/_internal/backend_executor.py, the worker's metadata.node_ip),
ActorDiedError's "\\tip: {node_ip_address}" (python/ray/exceptions.py) and the GCS's "The node with node id: ..
and address: {ip} .. has been marked dead" (ray.node_dead). So a node none of whose own kept lines carry a prefix
(its ranks printed only INFO lines, read as records without their text) is still named by Ray's address.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import chain

from correlator.kept import ContextRecord
from schemas.findings import Finding

_RAY_IP = re.compile(r"^\((?:[^\s()=,]+ )?pid=\d+, ip=(?P<ip>\d{1,3}(?:\.\d{1,3}){3})\)")
_ADDRESS_KINDS = (("ray_worker_rank", "ip"), ("ray_dead_ip", "host"))  # record kind, the field holding the address
_ADDRESS_SIGNATURES = frozenset({"ray.node_dead"})  # findings whose "host" is the node's address


def ray_node_ips(findings: Sequence[Finding], context: Sequence[ContextRecord],
                 of_kind: Mapping[str, Sequence[ContextRecord]]) -> list[str]:
    """The node addresses Ray names, in the order first seen: its prefixes (a check of one character for most
    lines), then its worker table, dead actors and dead nodes."""
    seen: dict[str, None] = {}
    for text in chain((f.text for f in findings), (rec.text for rec in context)):  # one at a time: no list of all
        if text[:1] == "(" and (m := _RAY_IP.match(text)):
            seen.setdefault(m["ip"])
    for kind, field in _ADDRESS_KINDS:
        for rec in of_kind.get(kind, ()):
            seen.setdefault(str(rec.fields[field]))
    for f in findings:
        if f.signature in _ADDRESS_SIGNATURES and isinstance(f.fields.get("host"), str):
            seen.setdefault(f.fields["host"])
    return list(seen)


def ray_line_hosts(findings: Sequence[Finding]) -> list[tuple[str, str]]:
    """(Ray's address, the host the rest of the line names) for a prefixed line whose own header names its host
    ("(RayTrainWorker pid=N, ip=10.0.0.18) r1n49:N:T [3] NCCL WARN ..."): one process, so one machine, even where
    no NCCL "Bootstrap : Using ib0:<address>" line (NCCL_DEBUG=INFO only) ties the two names."""
    pairs: dict[tuple[str, str], None] = {}
    for f in findings:
        host = f.speaker.host
        if host is not None and f.text[:1] == "(" and (m := _RAY_IP.match(f.text)) and m["ip"] != host:
            pairs.setdefault((m["ip"], host))
    return list(pairs)
