"""Schema migrations: Alembic, run programmatically when a store is opened.

:func:`ensure_schema` brings a database to :data:`HEAD_REVISION`:

1. Fast path (every open of a current database): one read of ``alembic_version``; nothing of Alembic
   is imported.
2. Otherwise Alembic is imported and, under a lock (``BEGIN IMMEDIATE`` on SQLite,
   ``pg_advisory_xact_lock(SCHEMA_LOCK_ID)`` on PostgreSQL) so concurrent first opens never race, the
   revision is read again and, if still behind, ``alembic.command.upgrade(config, "head")`` runs inside
   that same transaction: the migrations and the version row commit together or not at all.

The Alembic :class:`~alembic.config.Config` is built in code (no ``alembic.ini``);
``script_location`` is the ``migrations/`` folder of this package, shipped as package data.

A database made before Alembic (the hand-written schema versions 1 and 2, marked by
``ars_meta.schema_version``) has tables but no ``alembic_version``: Alembic starts it at the baseline
revision, whose upgrade adopts the existing tables (adds what is missing, drops nothing); see
``migrations/versions/0001_baseline.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from agent_rl_sandbox.tools.store._common import StoreError

log = logging.getLogger(__name__)

HEAD_REVISION = "0005"
"""The newest migration's revision id; a test checks it equals the script directory's head."""

SCHEMA_LOCK_ID = 7_243_110_591
"""PostgreSQL advisory lock held while migrating (the same id as the hand-written migrations used)."""

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(connection: Connection | None = None, url: str | None = None):
    """An Alembic ``Config`` for this package's migrations. With ``connection``, the migrations run on
    it (inside its open transaction); otherwise ``env.py`` connects to ``url``."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def current_revision(conn: Connection) -> str | None:
    """The revision recorded in ``alembic_version``, or ``None`` when the table is absent or empty."""
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def ensure_schema(engine: Engine) -> None:
    """Create or upgrade the store's tables to :data:`HEAD_REVISION` (see the module docstring).
    Raises ``sqlalchemy.exc.DBAPIError`` when the database cannot be reached or a migration fails, and
    :class:`~._common.StoreError` when the database was migrated by a newer release (an unknown
    revision); nothing is changed then."""
    try:
        with engine.execution_options(readonly=True).connect() as conn:
            if conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == HEAD_REVISION:
                return
    except DBAPIError:
        pass  # no alembic_version table yet
    # Import Alembic before taking the lock: under load its import is most of a first open, and every
    # concurrent opener (hook processes with a short busy timeout) waits for whoever holds the lock.
    from alembic import command
    from alembic.util import CommandError

    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK_ID})
        before = current_revision(conn)
        if before == HEAD_REVISION:
            return  # a concurrent opener migrated while we waited for the lock
        try:
            command.upgrade(alembic_config(conn), "head")
        except CommandError as e:
            raise StoreError(
                f"the store's schema is at revision {before!r}, which this release does not know ({e})",
                "upgrade agent-rl-sandbox to the release that made this database, or use another database",
            ) from None
        log.info("store schema upgraded from %s to %s", before or "none", HEAD_REVISION)
