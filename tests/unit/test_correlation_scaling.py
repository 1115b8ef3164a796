"""Correlating a job costs the same per rank at any world size (issue 23): counted, not timed.

The cost is the number of Python function calls diagnose() makes (cProfile's count, which repeats run to run), on
the same kind of job at N and 4N ranks: a job whose every survivor names the dead rank's address (so each one asks
which ranks live on that host) and whose every node's launcher reports an exit. Asking that by scanning every
rank made 16,384 ranks take 31 of 40 profiled seconds there; scanning is N calls per question, so 4N ranks cost
16x as many calls as N, where linear work costs 4x.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import pytest

import correlator
from catalog.loader import default_catalog
from correlator.diagnose import diagnose
from correlator.host_index import HostMap
from correlator.reading import SourceResult
from scan.engine import default_matcher, scan_sources
from simulate.training_logs import generate
from sources.files import expand

SMALL = 256
MAX_GROWTH = 4.6  # lines at 4N / lines at N: 4 is linear; N log N sorting and fixed costs leave a little over
CORRELATOR = str(Path(correlator.__file__).parent)
TraceFunction = Callable[[FrameType, str, object], object]


def _scanned(root: Path, ranks: int) -> list[SourceResult]:
    out = root / str(ranks)
    # every rank one training step: the same job shape at both sizes, only the world grows
    generate(out, ranks, size=ranks * 1_400, seed=7, compact=True, survivors="all", quiet=True)
    return scan_sources(default_matcher("auto"), expand([str(out / "logs")]), 2026, jobs=1).results


def _lines(results: list[SourceResult]) -> tuple[int, int | None]:
    """Lines of correlator/ executed by diagnose(), each turn of a loop counted (a comprehension's too), and the
    rank it names. Function calls alone would miss a scan inside one generator that yields only its matches."""
    catalog = default_catalog()
    count = 0

    def line(frame: FrameType, event: str, arg: object) -> TraceFunction:
        nonlocal count
        count += event == "line"
        return line

    def call(frame: FrameType, event: str, arg: object) -> TraceFunction | None:
        return line if frame.f_code.co_filename.startswith(CORRELATOR) else None

    was = sys.gettrace()
    sys.settrace(call)
    try:
        d = diagnose(results, catalog)
    finally:
        sys.settrace(was)
    return count, d.root_cause.rank if d.root_cause else None


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[SourceResult]]:
    root = tmp_path_factory.mktemp("scaling")
    return {n: _scanned(root, n) for n in (SMALL, 4 * SMALL)}


def test_four_times_the_ranks_cost_at_most_about_four_times_the_calls(jobs: dict[int, list[SourceResult]]) -> None:
    small, small_rank = _lines(jobs[SMALL])
    large, large_rank = _lines(jobs[4 * SMALL])
    assert small_rank is not None and large_rank is not None  # both jobs diagnosed: the work was all done
    assert large / small <= MAX_GROWTH, f"{SMALL} ranks: {small} lines, {4 * SMALL} ranks: {large} lines"


def test_the_ranks_on_a_host_are_those_mapped_to_it_whatever_wrote_the_map() -> None:
    """The inverse IdentityMap keeps is the scan it replaced, after every way the map is written."""
    hosts = HostMap[int]({0: "node000", 1: "node000"})
    hosts[2] = "node001.cluster"
    hosts.setdefault(1, "node009")  # kept: setdefault never moves a rank
    hosts.update({3: "node001.cluster", 0: "node002"})  # rank 0 moves
    hosts |= {4: "node003"}
    del hosts[4]
    for host in ("node000", "node001.cluster", "node002", "node003", "node009"):
        assert hosts.keys_on(host) == sorted(r for r, h in hosts.items() if h == host)
    assert hosts.has_host("node002") and not hosts.has_host("node003")
    assert hosts.hosts_named("node001") == {"node001.cluster"}
    assert hosts.hosts_named("node003") == set()
