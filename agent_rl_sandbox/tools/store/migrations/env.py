"""Alembic environment of the store.

Normally run by :func:`agent_rl_sandbox.tools.store._migrations.ensure_schema`, which passes an open
connection (``config.attributes["connection"]``) already inside a locked transaction; the migrations
then run in that transaction and the caller commits. Without a connection (the ``alembic`` command
line with ``sqlalchemy.url`` set) it connects itself. SQLite gets batch mode so future migrations can
alter columns (SQLite rebuilds the table).
"""

from __future__ import annotations

from alembic import context

from agent_rl_sandbox.tools.store._schema import metadata


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


_connection = context.config.attributes.get("connection")
if _connection is not None:
    _run(_connection)
else:
    from agent_rl_sandbox.tools.store._engine import make_engine

    _url = context.config.get_main_option("sqlalchemy.url")
    if not _url:
        raise SystemExit("set sqlalchemy.url (the store's database URL) to run these migrations")
    _engine = make_engine(_url)
    try:
        with _engine.connect() as _conn:
            _run(_conn)
            _conn.commit()
    finally:
        _engine.dispose()
