"""A source's runs of SIGTERMed pids and NCCL `Using` lines come out as one record a run (correlator/kept.py:
grouped): every reader of them must read what the records one by one give, on random mixes of speakers and kinds
interleaved, and with records of other kinds between a run's."""

from __future__ import annotations

import random
from typing import Any

import pytest

from correlator.identity import build_identity, records_by_kind
from correlator.kept import GROUPED_KINDS, ContextRecord, grouped, members
from correlator.naming import _advertised, _speakers
from correlator.speakers import Who


def _records(rng: random.Random) -> list[ContextRecord]:
    speakers = [Who(rng.choice([None, 0, 1]), rng.choice([None, "node1", "node2"]), rng.choice([None, 11, 12]),
                    rng.choice([None, 0])) for _ in range(4)]
    make: dict[str, Any] = {
        "worker_sigterm": lambda: {"pid": rng.choice([21, 22, 23, 24]), "signal": "SIGTERM"},
        "nccl_using": lambda: {"detail": rng.choice(["eth0:10.0.0.1<0>", "[0]ib0:10.0.1.2<0>", "OOB eth1:10.0.0.9",
                                                      "[1]eth2:10.0.0.1<0>", "eth0:10.0.0.7<0>"])},
        "nccl_comm": lambda: {"rank": rng.randrange(4), "nranks": 4, "device": 0},
        "pg_status": lambda: {"enqueued": 3, "completed": 2},
    }
    kinds = list(make)
    return [ContextRecord(kind, make[kind](), "a.log", line_no, rng.choice(speakers[: rng.randrange(1, 5)]), None)
            for line_no, kind in enumerate(rng.choice(kinds) for _ in range(rng.randrange(1, 80)))]


@pytest.mark.parametrize("seed", range(80))
def test_runs_read_as_their_records_do(seed: int) -> None:
    records = _records(random.Random(seed))
    runs = grouped(records)
    assert vars(build_identity(runs)) == vars(build_identity(records))
    assert _speakers([], runs) == _speakers([], records)
    assert _advertised(records_by_kind(runs), build_identity(runs)) == _advertised(records_by_kind(records),
                                                                                  build_identity(records))
    for kind, name in GROUPED_KINDS.items():  # every value, in its kind's order
        assert [v for r in runs if r.kind == kind for v in members(r, name)] == \
            [r.fields[name] for r in records if r.kind == kind]
    assert [r for r in runs if r.kind not in GROUPED_KINDS] == [r for r in records if r.kind not in GROUPED_KINDS]


def test_a_speakers_lines_between_anothers_are_runs_of_their_own() -> None:
    a, b = Who(0, "node1", 11), Who(1, "node2", 12)
    records = [ContextRecord("worker_sigterm", {"pid": pid, "signal": "SIGTERM"}, "a.log", n, who, None)
               for n, (pid, who) in enumerate([(21, a), (22, a), (23, b), (24, a)])]
    assert [(r.who, members(r, "pid")) for r in grouped(records)] == [(a, (21, 22)), (b, (23,)), (a, (24,))]


def test_a_run_stored_as_a_shard_reads_back_as_it_was() -> None:
    import json

    from correlator.shards import _context_from, _context_json

    who = Who(0, "node1", 11)
    for kind, name, values in (("worker_sigterm", "pid", (21, 22)), ("nccl_using", "detail", ("eth0:10.0.0.1<0>",))):
        records = [ContextRecord(kind, {name: v}, "a.log", n, who, None) for n, v in enumerate(values)]
        (run,) = grouped(records)
        assert _context_from(json.loads(json.dumps(_context_json(run))), "a.log", 0) == run
