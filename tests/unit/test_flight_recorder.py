"""Flight Recorder dumps: recognised by content, parsed without ever building a class from the file."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from correlator.flight_recorder import FlightDump, looks_like_dump, parse_dump, rank_from_name
from correlator.structured import Sniffer, parse_job


def _dump(enqueued: int, completed: int, op: str = "nccl:all_reduce") -> dict[str, Any]:
    entries = [{"record_id": s, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": s,
                "p2p_seq_id": 0, "op_id": s, "profiling_name": op if s == enqueued else "nccl:all_reduce",
                "input_sizes": [[3, 4]], "state": "completed" if s <= completed else "scheduled", "is_p2p": False}
               for s in range(1, enqueued + 1)]
    return {"version": "2.5", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": enqueued, "last_started_collective": -1,
                                "last_completed_collective": completed}}, "entries": entries}


class _Boom:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, ("touch /tmp/firstfault-pwned",))


def test_a_pickled_dump_gives_progress_and_collectives_per_process_group() -> None:
    d = parse_dump(pickle.dumps(_dump(5, 4), protocol=2), "node0/nccl_trace_rank_3")
    assert d is not None
    assert (d.rank, d.last_enqueued, d.last_completed) == (3, {"0": 5}, {"0": 4})
    entry = d.entry("0", 5)
    assert entry is not None and (entry.op, entry.state) == ("nccl:all_reduce", "scheduled")


def test_a_json_dump_under_any_name_is_recognised_by_its_content() -> None:
    data = json.dumps(_dump(2, 2)).encode()
    assert looks_like_dump(data)
    d = parse_dump(data, "copied/whatever.json", rank=7)
    assert d is not None and d.rank == 7 and d.last_enqueued == {"0": 2}


def test_a_pickle_that_asks_for_a_class_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = Path("/tmp/firstfault-pwned")
    marker.unlink(missing_ok=True)
    hostile = pickle.dumps({"entries": [], "pg_status": _Boom()}, protocol=2)
    assert parse_dump(hostile, "nccl_trace_rank_0") is None
    assert not marker.exists()


@pytest.mark.parametrize("data", [b"", b"\x80\x02garbage", b"\x80\x04\x95\x00", b'{"entries": [', b"plain log\n",
                                  pickle.dumps([1, 2, 3], protocol=2), json.dumps({"other": 1}).encode()])
def test_broken_or_foreign_bytes_are_not_a_dump(data: bytes) -> None:
    assert parse_dump(data, "trace_1") is None


def test_the_sniffer_keeps_bytes_only_for_a_dump_and_parses_across_chunks() -> None:
    blob = pickle.dumps(_dump(9, 8), protocol=2)
    sniffer = Sniffer("trace_4", None)
    for i in range(0, len(blob), 100):
        sniffer.feed(blob[i:i + 100])
    dump = sniffer.finish()
    assert isinstance(dump, FlightDump) and dump.rank == 4 and dump.last_enqueued == {"0": 9}
    text = Sniffer("rank0.log", 0)
    text.feed(b"[rank0]: step 1 loss 2.3\n")
    assert text.finish() is None


def test_the_rank_comes_from_the_writer_s_suffix() -> None:
    assert rank_from_name("/tmp/nccl_trace_rank_12") == 12
    assert rank_from_name("fr/trace_3.pkl") == 3
    assert rank_from_name("dump") is None


def test_a_job_event_beside_the_logs_is_recognised_and_validated() -> None:
    job = {"job_id": "88123", "state": "failed", "exit_codes": {"37": -9, "node004": 137}, "rank_hosts": {"37": "n4"}}
    parsed = parse_job(json.dumps(job).encode())
    assert parsed is not None and parsed.exit_codes == {"37": -9, "node004": 137} and parsed.rank_hosts == {37: "n4"}
    assert parse_job(json.dumps({"job_id": "x", "state": "exploded"}).encode()) is None  # not the contract
    assert parse_job(b'{"job_id": "x", "state": "failed", "exit_codes": {"1": "minus nine"}}') is None
