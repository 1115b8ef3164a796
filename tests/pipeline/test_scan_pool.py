"""The embedded runner with scan processes (pipeline/scanpool.py): the same incident and the same stored shards as
scanning in its own thread, on SQLite and PostgreSQL; a scan process that dies loses no shard; a shard whose data
does not decode is a dead letter as without a pool."""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from catalog.matcher import Matcher
from config.settings import load_settings
from pipeline.embedded import EmbeddedRunner
from pipeline.scanpool import ScanPool, usable
from runtime.build import pipeline_for
from scan.engine import default_matcher
from schemas.clock import system_clock
from schemas.incident import Incident
from schemas.wire import LogShard
from store.dead_letters import listed
from store.incidents import Store
from tests.pipeline.helpers import EXAMPLE, failed_job, shards_of

pytestmark = pytest.mark.skipif(not usable(), reason="no fork server on this platform")

DIE = b"scan-pool-test: this line ends the scan process that reads it"


class _DyingMatcher:
    """The default matcher, except that a scan process (not the test's own) reading DIE exits at once, as one the
    OOM killer takes."""

    def __init__(self, parent: int) -> None:
        self._inner, self._parent = default_matcher(), parent

    def spans(self, buffer: Any, *args: Any) -> Any:
        if os.getpid() != self._parent and DIE in bytes(buffer):
            os._exit(1)
        return self._inner.spans(buffer, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _dying_matcher(parent: int) -> Matcher:
    return _DyingMatcher(parent)  # type: ignore[return-value]


class _Service:
    """The embedded runner and its Pipeline on a real store, as `serve --embedded` builds them."""

    def __init__(self, url: str, pool: ScanPool | None) -> None:
        settings = load_settings(environ={"FIRSTFAULT_DATABASE_URL": url, "FIRSTFAULT_GROUP_WAIT_S": "60"},
                                 path="/dev/null")
        self.store = Store.open(url)
        self.runner = EmbeddedRunner(queue_size=10_000, clock=system_clock, scan_pool=pool)
        self.pipeline = pipeline_for(settings, self.store, self.runner, on_saved=lambda *_: None)
        self.runner.bind(self.pipeline)
        self.runner.start()

    def run(self, job_id: str, shards: list[LogShard]) -> Incident:
        self.runner.submit_job(failed_job(job_id), {})
        for shard in shards:
            self.runner.submit_shard(shard, {})
        deadline = time.monotonic() + 120
        while (incident := self.store.incident_for_job(job_id)) is None:
            assert time.monotonic() < deadline, f"no incident for {job_id}: {list(self.runner.failures)}"
            time.sleep(0.02)
        return incident

    def scans(self, job_id: str) -> list[tuple[str, int, dict[str, Any]]]:
        return sorted((s.key.token, s.seq, dict(s.scanned)) for s in self.store.job(job_id).shards)  # type: ignore[arg-type]

    def close(self) -> None:
        self.runner.stop()
        self.store.close()


@pytest.fixture
def services(db_url: str) -> Iterator[tuple[_Service, _Service]]:
    """Two services on one store: scanning in two processes, and in the runner's thread."""
    pooled, alone = _Service(db_url, ScanPool(2, default_matcher)), _Service(db_url, None)
    yield pooled, alone
    pooled.close()
    alone.close()


def _small_shards(job_id: str) -> list[LogShard]:
    """The example job in 1 kB shards: several hundred, more than the pool holds at once (4 batches of 64)."""
    return shards_of(job_id, EXAMPLE, chunk=1024)


def _same(incident: Incident) -> dict[str, Any]:
    return incident.diagnosis.model_dump(mode="json")


def test_scan_processes_give_the_incident_and_the_stored_scans_of_one_thread(
        services: tuple[_Service, _Service]) -> None:
    pooled, alone = services
    shards = _small_shards("pooled")
    assert len(shards) > 4 * 64  # more batches than the pool may hold at once
    with_pool = pooled.run("pooled", shards)
    without = alone.run("alone", _small_shards("alone"))
    assert (with_pool.signature, with_pool.rank, with_pool.host) == ("host.oom_killer", 37, "node004")
    assert _same(with_pool) == _same(without)
    assert pooled.scans("pooled") == alone.scans("alone")  # the JSON written as text reads back the same
    assert not pooled.runner.failures


def _with_die(shards: list[LogShard]) -> list[LogShard]:
    """The shards with DIE in one in the middle: in a batch with batches out before and after it."""
    victim = len(shards) // 2
    shards[victim] = shards[victim].model_copy(update={"data": shards[victim].data + DIE.decode() + "\n"})
    return shards


def test_a_scan_process_that_dies_loses_no_shard(sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    pool = ScanPool(2, partial(_dying_matcher, os.getpid()))
    service = _Service(sqlite_url, pool)
    try:
        before = pool.pids()
        shards = _with_die(_small_shards("dies"))
        incident = service.run("dies", shards)
        assert "a scan process died" in caplog.text
        assert len(service.store.job("dies").shards) == len(shards)  # every shard stored, DIE's too
        assert not service.runner.failures and not listed(service.store)
        service.run("after", _small_shards("after"))  # the next job's shards go to a new pool
        assert pool.pids() and set(pool.pids()).isdisjoint(before)
    finally:
        service.close()
    alone = _Service(sqlite_url, None)
    try:
        assert _same(incident) == _same(alone.run("dies-alone", _with_die(_small_shards("dies-alone"))))
    finally:
        alone.close()


def test_a_shard_that_does_not_decode_is_a_dead_letter_with_scan_processes(sqlite_url: str) -> None:
    service = _Service(sqlite_url, ScanPool(2, default_matcher))
    try:
        shards = _small_shards("bad")
        shards[3] = shards[3].model_copy(update={"compression": "zstd",
                                                 "data": base64.b64encode(b"not zstd").decode()})
        service.runner.submit_job(failed_job("bad"), {})
        for shard in shards:
            service.runner.submit_shard(shard, {})
        deadline = time.monotonic() + 120
        while len(service.store.job("bad").shards) < len(shards) - 1 or not listed(service.store):
            assert time.monotonic() < deadline, "the shards stored and the bad one's dead letter"
            time.sleep(0.02)
        [letter] = listed(service.store)
        assert (letter.kind, letter.where) == ("shard", "match_shard")
        assert letter.payload["seq"] == shards[3].seq and letter.payload["data"] == shards[3].data
        time.sleep(0.2)
        assert len(service.store.job("bad").shards) == len(shards) - 1  # the others of its batch are stored
    finally:
        service.close()


def test_a_batch_read_back_makes_no_reference_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's thread rebuilds a batch's scans with the cyclic collector held off (pipeline/scanpool.py:
    a collection there walked every scan the service keeps); that is safe only while rebuilding makes no
    cycles, so that reference counting frees whatever it drops. A batch as a scan process sends it: pickled."""
    import gc

    import pipeline.scanpool as scanpool
    from correlator.kept import ContextRecord
    from correlator.reading import SourceResult
    from pipeline.scanning import Scanned, arrival
    from schemas.findings import Finding, Speaker

    monkeypatch.setattr(scanpool, "_matcher", default_matcher())
    message = scanpool._scan([arrival(shard) for shard in _small_shards("cycles")[:64]], 2026)
    was = gc.isenabled()
    gc.enable()
    try:
        gc.collect()
        outcomes = scanpool.received(message)
        assert gc.isenabled()  # on again after
        gc.disable()
        assert all(isinstance(out, Scanned) for out in outcomes)
        assert sum(len(out.result.findings) for out in outcomes if isinstance(out, Scanned)) > 0
        del outcomes
        # What the collector finds now, kept to be read: none of it may be a scan's (another test's thread in this
        # worker may leave cycles of its own meanwhile; those are not the read-back's)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        scans = (Scanned, SourceResult, Finding, ContextRecord, Speaker)
        assert [type(obj).__name__ for obj in gc.garbage if isinstance(obj, scans)] == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        (gc.enable if was else gc.disable)()
