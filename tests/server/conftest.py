"""Server fixtures: a fresh PostgreSQL database per test for the multi-process HTTP test (the same
server and rules as ``tests/tools/conftest.py``: skipped without a server, failed under ``CI=true``)."""

from __future__ import annotations

import os
import uuid

import pytest

PG_ADMIN = os.environ.get("AGENT_RL_SANDBOX_TEST_PG_ADMIN", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture
def pg_url():
    try:
        import psycopg

        with psycopg.connect(_dsn(PG_ADMIN), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as e:  # noqa: BLE001 - any failure means "no server"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL not reachable at {PG_ADMIN}: {e}")
        pytest.skip(f"PostgreSQL not reachable at {PG_ADMIN}: {e}")
    name = f"ars_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_dsn(PG_ADMIN), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(_dsn(PG_ADMIN), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
