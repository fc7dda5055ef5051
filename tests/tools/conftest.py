"""Store fixtures for both backends.

``store_url`` runs a test once on SQLite (a file in ``tmp_path``) and once on PostgreSQL (a fresh database
``ars_test_<hex>`` created through the ``postgres`` database and dropped afterwards, so concurrent runs
never share tables). Without a reachable server the PostgreSQL variants skip with the reason, except when
``CI=true``: then they fail. The server is ``AGENT_RL_SANDBOX_TEST_PG_ADMIN`` (a SQLAlchemy URL of a
database the tests may connect to; default ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``).
"""

from __future__ import annotations

import os
import uuid

import pytest

from agent_rl_sandbox.tools.store import Store

PG_ADMIN = os.environ.get("AGENT_RL_SANDBOX_TEST_PG_ADMIN", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture(scope="session")
def pg_admin() -> str:
    """The admin URL of a reachable PostgreSQL server (skip, or fail under CI=true, when there is none)."""
    try:
        import psycopg

        with psycopg.connect(_dsn(PG_ADMIN), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as e:  # noqa: BLE001 - any failure means "no server"
        why = f"PostgreSQL not reachable at {PG_ADMIN}: {type(e).__name__}: {e}".strip()
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{why} (CI=true: the store tests must run against PostgreSQL)")
        pytest.skip(why)
    return PG_ADMIN


@pytest.fixture
def pg_url(pg_admin):
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    import psycopg

    name = f"ars_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_dsn(pg_admin), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = pg_admin.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(_dsn(pg_admin), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
