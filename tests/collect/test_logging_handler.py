"""collect.logging_handler.FirstfaultHandler inside a process, against a local ingest server."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from collect.logging_handler import FirstfaultHandler
from tests.fakes.ingest_api import FakeIngest


@pytest.fixture
def log() -> Iterator[logging.Logger]:
    logger = logging.getLogger(f"train.{time.monotonic_ns()}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    yield logger
    for h in list(logger.handlers):
        logger.removeHandler(h)
        h.close()


def _wait(predicate: object, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_records_arrive_in_order_as_one_source_with_rank_and_host(ingest: FakeIngest, log: logging.Logger) -> None:
    handler = FirstfaultHandler(ingest.base, job_id="j1", rank=3, host="gpu-c01", flush_interval_s=0.1)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log.addHandler(handler)
    for step in range(50):
        log.info("step %d loss %.2f", step, 2.0 - step / 100)
    log.error("RuntimeError: CUDA error: an illegal memory access was encountered")
    _wait(lambda: ingest.shards)  # shipped while the process runs, not only at exit
    handler.close()
    [(rank, host, stream, data)] = ingest.sources().values()
    assert (rank, host, stream) == (3, "gpu-c01", "stderr")
    lines = data.decode().splitlines()
    assert lines[0] == "INFO step 0 loss 2.00" and len(lines) == 51
    assert lines[-1] == "ERROR RuntimeError: CUDA error: an illegal memory access was encountered"
    assert handler.dropped == 0


def test_a_dead_service_never_blocks_logging_and_drops_with_a_count(ingest: FakeIngest,
                                                                    log: logging.Logger) -> None:
    ingest.delay_s, ingest.down = 3.0, True  # slow and refusing: every send takes 3 s and fails
    handler = FirstfaultHandler(ingest.base, job_id="j2", rank=0, max_buffer_bytes=20_000, batch_bytes=2_000,
                                flush_interval_s=0.05, close_timeout_s=1.0)
    log.addHandler(handler)
    for i in range(5_000):
        log.info("step %05d %s", i, "x" * 40)
    # 5,000 records logged before the first POST was answered: no emit waited for the service (counted, not timed)
    assert ingest.refused == 0
    _wait(lambda: handler.dropped >= 4_000)  # the buffer holds ~20 kB: the rest is dropped, not queued
    ingest.delay_s = 0.0
    _wait(lambda: ingest.refused >= 1)  # the shipper's POST in flight fails...
    ingest.down = False  # ...and the next one succeeds
    log.info("after the outage")
    handler.close()
    data = b"".join(d for *_, d in ingest.sources().values()).decode()
    assert data.splitlines()[-1] == "after the outage" and ingest.shards[-1].eof
    assert handler.dropped < 5_000
