"""Every e2e test that runs a whole diagnosis runs it twice: on the C line loop and on the Python path
(catalog/native.py), each a test of its own (``[native]``, ``[python]``), so that a difference between the two
shows as a wrong diagnosis on one path, wherever the extension is built. The Python run sets FIRSTFAULT_NATIVE=0
too, for the CLI runs in a child process. Where catalog._linescan is not built, the ``[native]`` runs are
skipped: the Python path is all there is (tests/unit/hs_engines.py fails the build instead where CI requires
it).

Modules in ONE_PATH run once: the CLI's usage and formats, the service's delivery of a diagnosis and the pool's
handling of processes do not depend on the path (their diagnoses are the ones the other modules check); a test
among them marked ``both_line_loops`` runs on both all the same.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from catalog import native

LINE_LOOPS = ["native", "python"]
ONE_PATH = {"test_cli", "test_planted_secrets", "test_pool"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if "line_loop" in metafunc.fixturenames and (
            module not in ONE_PATH or metafunc.definition.get_closest_marker("both_line_loops")):
        metafunc.parametrize("line_loop", LINE_LOOPS, indirect=True)


@pytest.fixture(autouse=True)
def line_loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str | None]:
    """The path this test's diagnoses take: native, python, or None (a ONE_PATH test: as the environment says)."""
    path: str | None = getattr(request, "param", None)
    if path is None:
        yield None
        return
    if path == "native" and native.built() is None:
        pytest.skip("catalog._linescan is not built here: the Python path is the only one")
    monkeypatch.setenv(native.ENV, "1" if path == "native" else "0")
    with native.switched(path == "native"):
        yield path
