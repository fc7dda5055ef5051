"""Shared fixtures: every test gets its own home folder, store and services (real SQLite, real
sandboxes, bubblewrap when installed)."""

from __future__ import annotations

import os
import uuid

import pytest

from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# sandbox_finish holds its answer to a multiple of this after the verifier starts (5 s by default, a
# timing channel's cure); the tests of that hold pass the setting themselves, the rest answer at once.
os.environ.setdefault("AGENT_RL_SANDBOX_VERIFIER_ANSWER_QUANTUM_S", "0")

# Under pytest-xdist (`make test`: one worker per CPU), each worker gets an equal share of the CPUs for
# torch's and OpenMP's thread pools (inherited by the trainers the tests launch), so two workers
# training at once do not run four threads on two cores.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    _share = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ.setdefault("OMP_NUM_THREADS", str(_share))

# PostgreSQL for the tests that use a second backend: ``AGENT_RL_SANDBOX_TEST_PG_ADMIN`` (a SQLAlchemy URL
# of a database the tests may connect to). Without a reachable server those tests skip with the reason,
# except under ``CI=true``: then they fail.
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


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(home=tmp_path / "home")


@pytest.fixture
def services(settings):
    s = Services.build(settings)
    yield s
    s.close()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A folder holding the tiny no-hub model (:func:`agent_rl_sandbox.trainers.tiny_model.build_tiny_model`
    with its defaults: 2 layers, hidden 64, BPE vocab target 1024, seed 0, TRL's Qwen2.5 chat
    template), built once per test run (about 2 s plus imports) and self-checked. Treat it as
    read-only: training tests write adapters to their own ``tmp_path``. Load it with
    ``load_tiny_model(path)`` or the Auto classes. Skips where the train extra is not installed."""
    from agent_rl_sandbox.trainers import missing_train_packages

    missing = missing_train_packages()
    if missing:
        pytest.skip(f"the train extra is not installed (missing: {', '.join(missing)})")
    from agent_rl_sandbox.trainers.tiny_model import build_tiny_model

    path = tmp_path_factory.mktemp("tiny_model")
    build_tiny_model(path)
    return path
