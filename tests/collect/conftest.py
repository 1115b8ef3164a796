from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.ingest_api import FakeIngest


@pytest.fixture
def ingest() -> Iterator[FakeIngest]:
    server = FakeIngest().start()
    yield server
    server.stop()
