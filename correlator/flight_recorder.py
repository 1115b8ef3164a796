"""Flight Recorder dumps: the files TORCH_NCCL_DEBUG_INFO_TEMP_FILE names, pickled or JSON. Pure: bytes in.

A dump is recognised by its content (a pickle, or JSON with the dump's keys), not by its name: people copy them
around as trace_3, rank3.pkl or anything else. Pickles are read with an unpickler that refuses every class, so
only builtin containers and scalars come out; a hostile pickle gets an error, never code execution.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

MAX_DUMP_BYTES = 64 << 20  # the default 2,000-entry ring with stacks is a few MB
_SNIFF = 1 << 16
_DUMP_KEYS = (b'"entries"', b'"pg_status"', b'"pg_config"')
_TRAILING_NUMBER = re.compile(r"(\d+)(?:\.\w+)?$")
_BAD_INPUT = (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
              RecursionError, OverflowError, MemoryError, UnicodeDecodeError)


class _BuiltinsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a Flight Recorder dump holds no classes; refusing {module}.{name}")


@dataclass(frozen=True)
class Collective:
    pg: str
    seq: int
    op: str
    state: str
    sizes: str


@dataclass(frozen=True)
class FlightDump:
    source: str
    rank: int | None
    last_enqueued: dict[str, int] = field(default_factory=dict)  # process group -> collective seq
    last_completed: dict[str, int] = field(default_factory=dict)
    collectives: tuple[Collective, ...] = ()

    def entry(self, pg: str, seq: int) -> Collective | None:
        return next((c for c in self.collectives if c.pg == pg and c.seq == seq), None)


def looks_like_dump(head: bytes) -> bool:
    """A pickle (protocol 2-5), or JSON whose first 64 KiB name the dump's keys."""
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return True
    start = head.lstrip()[:1]
    return start == b"{" and any(key in head[:_SNIFF] for key in _DUMP_KEYS)


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


def _collectives(entries: object) -> tuple[Collective, ...]:
    out = []
    for e in entries if isinstance(entries, list) else []:
        if not isinstance(e, dict) or e.get("is_p2p"):
            continue
        seq = _as_int(e.get("collective_seq_id"))
        group = e.get("process_group")
        pg = str(group[0]) if isinstance(group, list | tuple) and group else str(e.get("pg_id", "0"))
        if seq is not None:
            out.append(Collective(pg, seq, str(e.get("profiling_name", "")), str(e.get("state", "")),
                                  str(e.get("input_sizes", ""))))
    return tuple(out)


def _status(obj: dict[str, Any], key: str) -> dict[str, int]:
    status = obj.get("pg_status")
    out = {}
    for pg, values in (status.items() if isinstance(status, dict) else []):
        value = _as_int(values.get(key)) if isinstance(values, dict) else None
        if value is not None:
            out[str(pg)] = value
    return out


def rank_from_name(source: str) -> int | None:
    """nccl_trace_rank_5, trace_5, dump-5.pkl: the writer appends the rank to the prefix it was given."""
    m = _TRAILING_NUMBER.search(PurePath(source).name)
    return int(m[1]) if m else None


def parse_dump(data: bytes, source: str, rank: int | None = None) -> FlightDump | None:
    """The dump's per-group progress and collectives; None when the bytes are not a Flight Recorder dump."""
    if len(data) > MAX_DUMP_BYTES or not looks_like_dump(data[:_SNIFF]):
        return None
    try:
        obj = _BuiltinsOnly(io.BytesIO(data)).load() if data[:1] == b"\x80" else json.loads(data)
    except _BAD_INPUT:
        return None
    if not isinstance(obj, dict) or not ("entries" in obj or "pg_status" in obj):
        return None
    collectives = _collectives(obj.get("entries"))
    enqueued = _status(obj, "last_enqueued_collective")
    for c in collectives:  # no pg_status (old dumps): the newest entry is the last one enqueued
        enqueued.setdefault(c.pg, max(x.seq for x in collectives if x.pg == c.pg))
    own_rank = _as_int(obj.get("rank"))
    return FlightDump(source, rank if rank is not None else own_rank if own_rank is not None
                      else rank_from_name(source), enqueued, _status(obj, "last_completed_collective"), collectives)
