"""Placing torchrun's SIGTERMed pids costs the same per node at any job size (issue 23): counted, not timed.

Every node's agent prints one failure line and one run of SIGTERMed pids (pytorch/pytorch
torch/distributed/elastic/multiprocessing/api.py, SubprocessContext._close then _poll's "failed (exitcode...)"):
each failure's run is looked for among its own output's runs, not among every node's (which made 8,192 ranks spend
9% of correlation's counted lines here).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from correlator import teardown_pids
from correlator.identity import IdentityMap
from correlator.kept import ContextRecord
from correlator.local_ranks import LocalRanks
from correlator.speakers import Who

WORKERS = 4
TraceFunction = Callable[[FrameType, str, object], object]


def _job(nodes: int) -> tuple[LocalRanks, dict[str, list[ContextRecord]]]:
    """``nodes`` agents, each of whose local rank 1 failed and the other three were SIGTERMed."""
    local = LocalRanks()
    runs, failures = [], []
    for node in range(nodes):
        host, source = f"node{node:05d}", f"console/node{node:05d}.log"
        for lr in range(WORKERS):
            local.teach(("host", host), lr, node * WORKERS + lr)
        pids = [1000 + 10 * node + lr for lr in range(WORKERS)]
        who = Who(host=host)
        runs.append(ContextRecord("worker_sigterm", {"pids": (pids[0], pids[2], pids[3])}, source, 5, who, None))
        failures.append(ContextRecord("worker_failed", {"local_rank": 1}, source, 8, who, None))
    return local, {"worker_sigterm": runs, "worker_failed": failures}


def _placed(nodes: int) -> tuple[IdentityMap, int]:
    """The pids placed, and the lines of teardown_pids.py executed to place them (each turn of a loop counted, a
    comprehension's too: as tests/unit/test_correlation_scaling.py counts)."""
    lines = 0

    def line(frame: FrameType, event: str, arg: object) -> TraceFunction:
        nonlocal lines
        lines += event == "line"
        return line

    def call(frame: FrameType, event: str, arg: object) -> Any:  # a line tracer for this module, else none
        return line if frame.f_code.co_filename == teardown_pids.__file__ else None

    ids = IdentityMap()
    local, of_kind = _job(nodes)
    was = sys.gettrace()
    sys.settrace(call)
    try:
        teardown_pids.place_teardown_pids(ids, local, of_kind)
    finally:
        sys.settrace(was)
    return ids, lines


def test_each_node_s_pids_are_placed_at_its_own_ranks() -> None:
    ids, _ = _placed(64)
    assert len(ids.by_host_pid) == 64 * 3
    assert ids.by_host_pid[("node00063", 1000 + 630 + 3)] == 63 * WORKERS + 3  # local rank 3 of the last node
    assert ("node00063", 1000 + 630 + 1) not in ids.by_host_pid  # the failed worker was not SIGTERMed


def test_four_times_the_nodes_cost_four_times_the_lines() -> None:
    _, small = _placed(64)
    _, large = _placed(256)
    assert small > 0
    assert large <= 4.2 * small, (small, large)  # every node's run weighed against every failure line: 11.5x
