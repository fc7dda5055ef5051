"""Store fixtures for both backends.

``store_url`` runs a test once on SQLite (a file in ``tmp_path``) and once on PostgreSQL (a fresh database
``ars_test_<hex>`` created through the ``postgres`` database and dropped afterwards, so concurrent runs
never share tables). Without a reachable server the PostgreSQL variants skip with the reason, except when
``CI=true``: then they fail. ``pg_admin`` and ``pg_url`` live in ``tests/conftest.py`` (shared with the
server and worker tests).
"""

from __future__ import annotations

import pytest

from agent_rl_sandbox.tools.store import Store


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def store(store_url):
    s = Store(store_url)
    yield s
    s.close()
