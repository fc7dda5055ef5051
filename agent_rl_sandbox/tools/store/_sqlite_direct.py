"""The event-loop write path of ``trajectory_log_step`` on SQLite: plain DB-API, no SQLAlchemy.

:meth:`TrajectoryRepository.log_steps` with ``nowait=True`` (the MCP adapter's first try, on its event
loop) runs here: the same statements as its SQLAlchemy path (``BEGIN IMMEDIATE``; read the trajectory
row, its owner with it, refusing another owner's before anything is written; ``INSERT ... ON CONFLICT DO
NOTHING RETURNING`` for one step with a client step id, else look up retried ids, insert, bump
``step_count``; commit), issued through one ``sqlite3`` connection that this
module keeps for the purpose (``sqlite3`` caches each statement's prepared form per connection). Core's
statement compilation, cache-key generation, pool checkout and event dispatch were about 0.5 ms of a
~2 ms call on the benchmark machine; these statements cost about 0.07 ms.

The connection is opened from the engine (so it gets the engine's ``connect`` pragmas: WAL,
``synchronous=NORMAL``, foreign keys), detached from the pool, and set to ``busy_timeout=0``: a write
lock held elsewhere makes ``BEGIN IMMEDIATE`` fail at once, which becomes
:class:`~agent_rl_sandbox.tools.errors.WouldWait` (nothing written; the caller repeats the call in a
worker thread on the SQLAlchemy path). A second thread finding the connection in use gets
:class:`WouldWait` too, never a wait. After a ``fork`` the child opens its own connection.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from agent_rl_sandbox.schemas.trajectory import Step
from agent_rl_sandbox.tools.errors import WouldWait
from agent_rl_sandbox.tools.store._common import utcnow

if TYPE_CHECKING:
    from agent_rl_sandbox.tools.store._trajectories import AppendResult, TrajectoryRepository, _Prepared

_INSERT = "INSERT INTO steps (session_id, step_id, client_step_id, provenance, data_json) VALUES (?, ?, ?, ?, ?)"
_INSERT_NEW = _INSERT + " ON CONFLICT (session_id, client_step_id) DO NOTHING RETURNING step_id"
_ROW = "SELECT status, step_count, owner FROM trajectories WHERE session_id = ?"
_OWNER = "SELECT owner FROM trajectories WHERE session_id = ?"
_BUMP = "UPDATE trajectories SET step_count = ? WHERE session_id = ?"


def _raise_if_busy(e: sqlite3.OperationalError) -> None:
    """:class:`WouldWait` for SQLite's "database is locked" / "busy" (the caller has written nothing)."""
    if "locked" in str(e) or "busy" in str(e):
        raise WouldWait("the SQLite database is locked by another connection") from None


def _row_tuple(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["session_id"], r["step_id"], r["client_step_id"], r["provenance"], r["data_json"])


class DirectSqlite:
    """One ``sqlite3`` connection for non-waiting reads and appends (see the module docstring).

    Thread-safe: each use takes a lock without waiting (:class:`WouldWait` when it is taken)."""

    def __init__(self, engine: Engine):
        self._engine = engine
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    @contextmanager
    def _use(self) -> Iterator[sqlite3.Connection]:
        if not self._lock.acquire(blocking=False):
            raise WouldWait("the direct SQLite connection is in use by another thread")
        try:
            if self._conn is None or self._pid != os.getpid():
                fairy = self._engine.raw_connection()  # runs the engine's connect pragmas
                fairy.detach()  # ours for good: not returned to (or reset by) the pool
                conn = fairy.dbapi_connection
                assert isinstance(conn, sqlite3.Connection)
                conn.execute("PRAGMA busy_timeout=0")
                self._conn, self._pid = conn, os.getpid()
            yield self._conn
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the connection (a later use opens a new one)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction on this connection, committed when the block ends
        (rolled back when it raises). Raises :class:`WouldWait`, with nothing written, when the
        connection is in use by another thread or the write lock is held elsewhere."""
        with self._use() as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                _raise_if_busy(e)
                raise
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(e, sqlite3.OperationalError):
                    _raise_if_busy(e)  # nothing was written: the waiting path can do it
                raise

    def row(self, sql: str, params: tuple[Any, ...]) -> dict[str, Any] | None:
        """The first row of a read (column name to value), without waiting (:class:`WouldWait` where
        the connection is in use or SQLite answers busy)."""
        with self._use() as conn:
            try:
                cur = conn.execute(sql, params)
                got = cur.fetchone()
            except sqlite3.OperationalError as e:
                _raise_if_busy(e)
                raise
        return None if got is None else dict(zip([d[0] for d in cur.description], got, strict=True))

    def owner(self, session_id: str) -> tuple[bool, str | None]:
        """``(known, owner)`` of one trajectory, read without waiting (:class:`WouldWait` where SQLite
        answers busy, e.g. another connection in exclusive locking mode)."""
        with self._use() as conn:
            try:
                row = conn.execute(_OWNER, (session_id,)).fetchone()
            except sqlite3.OperationalError as e:
                _raise_if_busy(e)
                raise
        return (False, None) if row is None else (True, row[0])

    def append(
        self,
        repo: TrajectoryRepository,
        session_id: str,
        prepared: list[_Prepared],
        finished: Callable[[str], Exception],
        owner_check: Callable[[str | None], None] | None = None,
    ) -> AppendResult:
        """Append ``prepared`` in one ``BEGIN IMMEDIATE`` transaction, exactly as
        :meth:`TrajectoryRepository._append_locked` does (same rows, same result). ``owner_check`` gets
        the trajectory's stored owner, read in that transaction with its status and step count (no
        separate read: the check and the write see the same row), before anything is written; what it
        raises rolls the transaction back and propagates. Raises :class:`WouldWait` (nothing written)
        when the write lock is held, ``finished(session_id)`` for new steps of a finished trajectory,
        and :class:`StoreError` for an unknown one."""
        with self._use() as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                _raise_if_busy(e)
                raise
            try:
                res = self._append_in(conn, repo, session_id, prepared, finished, owner_check)
                conn.execute("COMMIT")
            except BaseException as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(e, sqlite3.OperationalError):
                    _raise_if_busy(e)  # nothing was written: the waiting path can do it
                raise
            return res

    @staticmethod
    def _append_in(
        conn: sqlite3.Connection,
        repo: TrajectoryRepository,
        session_id: str,
        prepared: list[_Prepared],
        finished: Callable[[str], Exception],
        owner_check: Callable[[str | None], None] | None,
    ) -> AppendResult:
        row = conn.execute(_ROW, (session_id,)).fetchone()
        if row is None:
            repo._unknown(session_id)
        status, step_count, owner = row
        if owner_check is not None:
            owner_check(owner)
        cids = [p.step.client_step_id for p in prepared if p.step.client_step_id is not None]
        if len(prepared) == 1 and cids and status != "finished" and sqlite3.sqlite_version_info >= (3, 35):
            rows, plan = repo._number(session_id, prepared, {}, step_count + 1, utcnow())
            if conn.execute(_INSERT_NEW, _row_tuple(rows[0])).fetchone() is not None:
                conn.execute(_BUMP, (step_count + 1, session_id))
                return repo._result(prepared, plan, step_count + 1)
        existing: dict[str, Step] = {}
        uniq = list(dict.fromkeys(cids))
        for i in range(0, len(uniq), 500):
            chunk = uniq[i : i + 500]
            q = (
                "SELECT client_step_id, data_json FROM steps WHERE session_id = ? AND client_step_id IN "
                f"({', '.join('?' * len(chunk))})"
            )
            for cid, data in conn.execute(q, (session_id, *chunk)).fetchall():
                existing[cid] = Step.model_validate_json(data)
        fresh = repo._fresh_count(prepared, existing)
        if fresh and status == "finished":
            raise finished(session_id)
        rows, plan = repo._number(session_id, prepared, existing, step_count + 1, utcnow())
        if rows:
            conn.executemany(_INSERT, [_row_tuple(r) for r in rows])
            conn.execute(_BUMP, (step_count + fresh, session_id))
        return repo._result(prepared, plan, step_count + fresh)
