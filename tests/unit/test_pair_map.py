"""PairMap reads as the flat dict it replaces (correlator/pair_map.py): the same values, and its items in the same
order, whatever mix of writes made it. Readers pick first or last winners by that order (local_ranks' placed map
from by_host_pid's items), so an order off by one entry would change a diagnosis."""

from __future__ import annotations

import pickle
import random

import pytest

from correlator.identity import IdentityMap
from correlator.pair_map import PairMap


@pytest.mark.parametrize("seed", range(20))
def test_items_come_in_a_dicts_order_after_any_mix_of_writes(seed: int) -> None:
    rng = random.Random(seed)
    flat: dict[tuple[str | None, int], int] = {}
    kept: PairMap[int] = PairMap()
    hosts = [None, "node1", "node2", "node3.cluster"]
    for _ in range(rng.randint(1, 300)):
        key, value, write = (rng.choice(hosts), rng.randint(0, 9)), rng.randint(0, 99), rng.random()
        if write < 0.5:
            flat[key] = value
            kept[key] = value
        elif write < 0.85:
            assert kept.setdefault(key, value) == flat.setdefault(key, value)
        elif key in flat:
            del flat[key]
            del kept[key]
        assert len(kept) == len(flat)
    assert list(kept.items()) == list(flat.items())
    assert list(kept.values()) == list(flat.values())
    assert kept == flat and flat == kept
    for host in hosts:
        for number in range(10):
            assert ((host, number) in kept) == ((host, number) in flat)
            assert kept.get((host, number)) == flat.get((host, number))
    assert list(pickle.loads(pickle.dumps(kept)).items()) == list(flat.items())


def test_a_missing_key_is_missing_as_in_a_dict() -> None:
    kept: PairMap[int] = PairMap({("node1", 42): 3})
    assert kept[("node1", 42)] == 3
    with pytest.raises(KeyError):
        kept[("node1", 43)]
    with pytest.raises(KeyError):
        kept[("node2", 42)]
    odd: object = ("node1",)
    assert odd not in kept


def test_an_identity_map_answers_from_its_pair_maps() -> None:
    ids = IdentityMap(by_host_pid=PairMap({("node1", 42): 3}), rank_of_bus=PairMap({("node1", 0x3B): 3}))
    assert ids.rank_of("node1", 42) == 3 and ids.rank_of_pci("node1", "0000:3b:00.0") == 3
