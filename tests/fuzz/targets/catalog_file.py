"""Fuzz target: a user's catalog file (FIRSTFAULT_CATALOG_PATH) holding the input's bytes, loaded as the loader
loads user files (catalog/loader.py: env_sources, build_catalog) without the bundled catalog, which would cost
0.4 s an input. The answer is a catalog, or CatalogError naming the file; never another exception."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

from catalog.loader import build_catalog, env_sources
from schemas.errors import CatalogError


@cache
def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="ff-fuzz-catalog-"))


def check(data: bytes) -> None:
    folder = _folder()
    path = folder / "site.yaml"
    path.write_bytes(data)
    try:
        build_catalog((), env_sources(str(folder)))
    except CatalogError as exc:
        assert str(exc).startswith(str(path)), f"CatalogError not naming the file: {exc}"
        assert exc.problem, "CatalogError without a reason"

