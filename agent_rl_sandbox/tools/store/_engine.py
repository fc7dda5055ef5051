"""Engine creation for the two supported databases.

SQLite (the embedded default) runs in WAL mode with foreign keys on, and every write transaction is
``BEGIN IMMEDIATE`` (it takes the database's write lock at its start, so two writers never deadlock
upgrading a read lock). A connection opened with the ``readonly`` execution option begins with a plain
deferred ``BEGIN`` instead, and one opened with the ``nowait`` option begins ``BEGIN IMMEDIATE`` with no busy
wait: when another connection holds the write lock it fails at once (``sqlite3.OperationalError``,
"database is locked") instead of waiting, so a caller on an event loop can fall back to a worker thread.
PostgreSQL gets ``pool_pre_ping`` and, when a caller bounds its waits, a
``lock_timeout`` and connect timeout.
"""

from __future__ import annotations

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine


def make_engine(url: str, busy_timeout_s: float | None = None) -> Engine:
    """Create an engine for a SQLAlchemy ``url`` (``sqlite:///path`` or ``postgresql+psycopg://...``).

    ``busy_timeout_s`` bounds how long a call may wait for a lock (default 30 s on SQLite, the server's
    own settings on PostgreSQL); short-lived callers such as the hook command pass a small value so they
    give up instead of hanging (a wait inside SQLite cannot be interrupted by a signal)."""
    if url.startswith("sqlite"):
        busy = 30.0 if busy_timeout_s is None else busy_timeout_s
        engine = create_engine(url, connect_args={"timeout": busy, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):  # pragma: no cover - exercised by every sqlite test
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={int(busy * 1000)}")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):  # pragma: no cover
            opts = conn.get_execution_options()
            if opts.get("readonly"):
                conn.exec_driver_sql("BEGIN")
            elif opts.get("nowait"):
                conn.exec_driver_sql("PRAGMA busy_timeout=0")
                try:
                    conn.exec_driver_sql("BEGIN IMMEDIATE")
                finally:
                    conn.exec_driver_sql(f"PRAGMA busy_timeout={int(busy * 1000)}")
            else:
                conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    if busy_timeout_s is not None:
        ms = max(1, int(busy_timeout_s * 1000))
        return create_engine(
            url,
            pool_pre_ping=True,
            connect_args={"connect_timeout": max(1, int(busy_timeout_s)), "options": f"-c lock_timeout={ms}"},
        )
    return create_engine(url, pool_pre_ping=True)
