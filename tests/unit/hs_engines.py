"""The Hyperscan engines a test runs on: python-hyperscan, and libhs (catalog._linescan, the C line loop) where
setup.py could build it. `.ci/run` installs libhs and sets FIRSTFAULT_REQUIRE_LIBHS=1: there a missing build
fails the tests instead of skipping them."""

from __future__ import annotations

import os

import pytest

HS_ENGINES = ["hyperscan", "libhs"]


def libhs_built() -> bool:
    try:
        import catalog._linescan  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


def require(engine: str) -> None:
    """Skip (or, where libhs is required, fail) unless ``engine`` can load here."""
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    elif engine == "libhs" and not libhs_built():
        if os.environ.get("FIRSTFAULT_REQUIRE_LIBHS"):
            pytest.fail("catalog._linescan was not built although libhs is installed: see setup.py")
        pytest.skip("catalog._linescan not built (no libhs headers: apt-get install libvectorscan-dev)",
                    allow_module_level=True)
