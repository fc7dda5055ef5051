"""The store: one database, opened once per process, holding one repository per aggregate.

Opening a :class:`Store` creates the engine (:func:`~._engine.make_engine`) and brings the schema to
the newest Alembic revision (:func:`~._migrations.ensure_schema`: one read when it is current).
"""

from __future__ import annotations

from typing import Any

from agent_rl_sandbox.tools.store._engine import make_engine
from agent_rl_sandbox.tools.store._episodes import EpisodeStart, begin_episode
from agent_rl_sandbox.tools.store._hook_events import HookEventRepository
from agent_rl_sandbox.tools.store._migrations import ensure_schema
from agent_rl_sandbox.tools.store._sandboxes import SandboxRepository
from agent_rl_sandbox.tools.store._trajectories import TrajectoryRepository


class Store:
    """Trajectories (with steps), sandboxes and pending hook events in one SQLite or PostgreSQL database.

    ``url`` is a SQLAlchemy URL (``sqlite:///path/store.db`` or ``postgresql+psycopg://...``);
    ``busy_timeout_s`` bounds each wait for a lock (see :func:`~._engine.make_engine`). Raises
    ``sqlalchemy.exc.DBAPIError`` (or ``OperationalError``) when the database cannot be opened or
    migrated. Safe to share between threads; each process opens its own.
    """

    def __init__(self, url: str, *, busy_timeout_s: float | None = None):
        self.url = url
        self.engine = make_engine(url, busy_timeout_s)
        try:
            ensure_schema(self.engine)
        except BaseException:
            self.engine.dispose()
            raise
        self.trajectories = TrajectoryRepository(self.engine)
        """Trajectories and their steps."""
        self.sandboxes = SandboxRepository(self.engine, self.trajectories._direct)
        """Sandbox rows."""
        self.hook_events = HookEventRepository(self.engine, self.trajectories)
        """Pending hook events (client hooks)."""

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    def begin_episode(self, **kw: Any) -> EpisodeStart:
        """Record a sandbox episode's start (old trajectory closed, new one with its reset step, the
        sandbox row) in one transaction: :func:`~._episodes.begin_episode`, same arguments."""
        return begin_episode(self.trajectories, **kw)

    def close(self) -> None:
        """Release the database connections (the store must not be used afterwards)."""
        self.trajectories.close()
        self.engine.dispose()
