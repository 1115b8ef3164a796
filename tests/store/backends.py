"""The SQL Store as every Store contract suite opens it on a real backend: SQLite, or PostgreSQL (marked
integration). The in-memory side of each suite is its own fake."""

from __future__ import annotations

import pytest

from store.incidents import Store


def sql_store(request: pytest.FixtureRequest) -> Store:
    """The Store on the backend ``request.param`` names ("sqlite" or "postgresql"), on a fresh database."""
    if request.param == "sqlite":
        return Store.open(str(request.getfixturevalue("sqlite_url")))
    request.applymarker(pytest.mark.integration)
    return Store.open(str(request.getfixturevalue("fresh_pg_url")))
