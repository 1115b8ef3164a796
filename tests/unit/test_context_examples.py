"""Every context pattern carries example lines in its upstream format, and every engine finds each of them."""

from __future__ import annotations

import re

import pytest

from correlator.context import CONTEXT_EXAMPLES, CONTEXT_PATTERNS
from scan.engine import build_matcher, default_matcher
from tests.unit.hs_engines import HS_ENGINES, require


def test_every_context_pattern_has_an_example_it_finds() -> None:
    assert set(CONTEXT_EXAMPLES) == set(CONTEXT_PATTERNS)
    for name, lines in CONTEXT_EXAMPLES.items():
        assert lines, name
        for line in lines:
            assert re.search(CONTEXT_PATTERNS[name], line, re.MULTILINE), (name, line)


@pytest.mark.parametrize("engine", ["re", *HS_ENGINES])
def test_each_engine_reads_every_context_example_in_the_full_catalog(engine: str) -> None:
    """Among the catalog's ~600 patterns Hyperscan dropped Ray's tab-indented `ip:` line (the host of a dead
    actor); the self-check scans the examples and hands what the engine misses to `re`."""
    if engine != "re":
        require(engine)
    matcher = build_matcher(default_matcher().catalog, engine)
    for name, lines in CONTEXT_EXAMPLES.items():
        for line in lines:
            kinds = {kind for hit in matcher.match(b"x\n" + line.encode() + b"\n") for kind in hit[5]}
            assert name in kinds, (engine, name, line)


@pytest.mark.parametrize("engine", ["re", *HS_ENGINES])
def test_a_dead_ray_actors_address_is_read_after_its_namespace_line(engine: str) -> None:
    """python/ray/exceptions.py prints the actor's namespace (a UUID) right before its ip: Hyperscan 5.4 lost the
    anchored ip line after any line holding a UUID until the engine scanned for an unanchored prefilter."""
    if engine != "re":
        require(engine)
    matcher = build_matcher(default_matcher().catalog, engine)
    report = (b"ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
              b"\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict\n"
              b"\tactor_id: 5a3f0e2c8d1b7a6e4c9f2d0b01000000\n"
              b"\tpid: 20518\n"
              b"\tname: mI2k7bWorkerDict_0:3\n"
              b"\tnamespace: c53c8492-c985-4b6e-9247-c8a39d650cf6\n"
              b"\tip: 10.16.99.48\n")
    read = {kind: fields for hit in matcher.match(report) for kind, fields in hit[5].items()}
    assert read.get("ray_dead_ip") == {"host": "10.16.99.48"}
    assert read.get("ray_dead_name") == {"group": 0, "local_rank": 3}
