"""A distinct field dict kept as its shape's shared key table and its own values (correlator/shaped.py, issue 23):
every reader sees the same dict, and a rank's init line's four fields cost 120 bytes, not 192."""

from __future__ import annotations

import json
import pickle
import tracemalloc

from correlator.interned import Interner
from correlator.shaped import shaped


def _init_fields(rank: int) -> dict[str, object]:  # an NCCL init line's captures (correlator/context.py nccl_comm)
    return {"rank": rank, "nranks": 131072, "device": rank % 8, "bus": f"{rank % 8 + 1}b000"}


def test_a_shaped_dict_reads_as_the_dict_it_replaces() -> None:
    plain = _init_fields(4097)
    kept = shaped(dict(plain))
    assert type(kept) is dict and kept == plain and list(kept.items()) == list(plain.items())
    assert json.dumps(kept) == json.dumps(plain)
    assert pickle.loads(pickle.dumps(kept)) == plain
    assert {**kept, "rank": 1}["rank"] == 1 and kept["rank"] == 4097  # readers build new dicts; it stays
    written = shaped({"seq": 21, "op": "ALLREDUCE"})  # a shape of its own: a writer stops its table's sharing
    written["extra"] = 1  # a writer (none after the scan) still gets a working dict
    assert written == {"seq": 21, "op": "ALLREDUCE", "extra": 1}


def test_names_that_cannot_share_a_table_are_left_as_they_are() -> None:
    for fields in ({}, {"__class__": 1}, {"not an identifier": 2}, {3: "a number"}):
        assert shaped(fields) is fields  # type: ignore[arg-type]


def test_distinct_dicts_of_one_shape_take_less_memory() -> None:
    def traced(make: object) -> int:
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            kept = [make(_init_fields(rank)) for rank in range(5_000)]  # type: ignore[operator]
            after = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert len(kept) == 5_000
        return after - before

    plain, shared = traced(dict), traced(shaped)
    assert shared < 0.75 * plain, (plain, shared)


def test_the_interner_keeps_each_distinct_dict_shaped_and_equal_ones_shared() -> None:
    interner = Interner()
    first = interner.fields(_init_fields(9000))
    again = interner.fields(_init_fields(9000))
    other = interner.fields(_init_fields(9001))
    assert again is first and other == _init_fields(9001) and first == _init_fields(9000)
