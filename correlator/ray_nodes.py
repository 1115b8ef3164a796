"""The names Ray gives a job's nodes. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import chain

from correlator.kept import ContextRecord
from correlator.packed_text import starting
from correlator.sieve import texts_starting
from schemas.findings import Finding

# Ray prefixes a worker's lines with its node's address (python/ray/_private/worker.py, print_worker_logs:
# "({name} pid=N, ip=A) "): Ray knows, lists (`ray status`, `ray list nodes`) and reports its nodes by that address,
# so it is the scheduler's name of the node, as Slurm's is its host name; NCCL's header beside it is gethostname's.
_RAY_IP = re.compile(r"^\((?:[^\s()=,]+ )?pid=\d+, ip=(?P<ip>\d{1,3}(?:\.\d{1,3}){3})\)")
_RAY_ADDRESS_FIELDS = (("ray_worker_rank", "ip"), ("ray_dead_ip", "host"))  # record kind, its node-address field


def ray_node_ips(findings: Sequence[Finding], context: Sequence[ContextRecord],
                 of_kind: Mapping[str, list[ContextRecord]]) -> list[str]:
    """The node addresses Ray names, first seen first: its prefixes, and records kept without their text (a node
    lost silently prints no error line): Ray Train's worker table and ActorDiedError's `ip:` (context.py)."""
    seen: dict[str, None] = {}
    # the lines that open with "(", picked in C (every rank's lines were read here, the packed ones rebuilt)
    for text in chain((f.text for f in starting(findings, "(")), (rec.text for rec in texts_starting(context, "("))):
        if m := _RAY_IP.match(text):
            seen.setdefault(m["ip"])
    for kind, field in _RAY_ADDRESS_FIELDS:
        for rec in of_kind.get(kind, ()):
            if isinstance(address := rec.fields.get(field), str):
                seen.setdefault(address)
    return list(seen)


def ray_same_nodes(findings: Sequence[Finding]) -> list[tuple[str, str]]:
    """(Ray's address, the host the line itself names) for each pair a forwarded line gives: the prefix is the
    worker's node's address and an NCCL header after it (`host:pid:tid [dev]`, src/debug.cc) is gethostname() of
    the same process, so the two name one node even where no NCCL INFO line (`Bootstrap : Using ib0:A`) joins them."""
    pairs: dict[tuple[str, str], None] = {}
    for f in starting(findings, "("):  # picked in C, as ray_node_ips picks them
        host = f.speaker.host
        if host and (m := _RAY_IP.match(f.text)) and m["ip"] != host \
                and _header(f.text[m.end():]).startswith(host + ":"):  # the line's header, not its file's folder
            pairs.setdefault((m["ip"], host))
    return list(pairs)


# NCCL_DEBUG_TIMESTAMP_FORMAT (src/debug.cc, ncclDebugTimestampFormat) prints a bracketed time before the header
_NCCL_TIME = re.compile(r"\s*(?:\[[^\]\n]{1,64}\]\s*)?")


def _header(rest: str) -> str:
    """What follows Ray's prefix, from NCCL's `host:pid:tid` header on (its optional timestamp skipped)."""
    skip = _NCCL_TIME.match(rest)
    return rest[skip.end():] if skip else rest
