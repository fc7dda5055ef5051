"""The hook events repository: events of a client hook (Claude Code) waiting for their partner.

A PreToolUse waits for its PostToolUse, a Stop for the end of the turn. Each pending event is a row
of ``hook_pending`` keyed by ``(session_id, key)``; its data is redacted like a step before it is
written. :meth:`HookEventRepository.transaction` opens one locked transaction on one trajectory in
which pending events are read, written and turned into steps together, so a pre-tool event and the
step that replaces it change together or not at all.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection, Engine

from agent_rl_sandbox.schemas.trajectory import Step
from agent_rl_sandbox.tools.store._common import utcnow
from agent_rl_sandbox.tools.store._schema import hook_pending
from agent_rl_sandbox.tools.store._trajectories import TrajectoryRepository


class PendingEvent(NamedTuple):
    """One pending hook event (unpacks as ``key, kind, data``)."""

    key: str
    kind: str
    """What waits: ``tool`` (a PreToolUse), ``stop`` or ``meta``."""
    data: dict[str, Any]
    """The redacted event data as stored."""


class HookEventTx:
    """Hook bookkeeping inside one locked transaction on one trajectory (see
    :meth:`HookEventRepository.transaction`).

    ``get``/``put``/``pop``/``items`` manage pending events; ``append`` adds steps in the same
    transaction. ``redactions`` counts the secrets redacted so far, ``appended`` the ``(step, created)``
    pairs appended so far.
    """

    def __init__(
        self, trajectories: TrajectoryRepository, conn: Connection, session_id: str, status: str, step_count: int
    ):
        self._trajectories = trajectories
        self._conn = conn
        self.session_id = session_id
        self._status = status
        self._step_count = step_count
        self.redactions: Counter[str] = Counter()
        self.appended: list[tuple[Step, bool]] = []

    def _where(self, key: str):
        return (hook_pending.c.session_id == self.session_id) & (hook_pending.c.key == key)

    def get(self, key: str) -> dict[str, Any] | None:
        """The data of the pending event ``key``, or ``None``."""
        data = self._conn.execute(select(hook_pending.c.data_json).where(self._where(key))).scalar()
        return json.loads(data) if data is not None else None

    def put(self, key: str, kind: str, data: dict[str, Any]) -> None:
        """Insert or replace a pending event (redacted first; a replacement keeps its first ``kind``
        and creation time, so :meth:`items` keeps the first-recorded order)."""
        data, counts = self._trajectories.redactor.value(data)
        self.redactions.update(counts)
        now = utcnow()
        blob = json.dumps(data, sort_keys=True, default=str)
        exists = self._conn.execute(select(hook_pending.c.key).where(self._where(key))).first()
        if exists:
            self._conn.execute(update(hook_pending).where(self._where(key)).values(data_json=blob, updated_at=now))
        else:
            self._conn.execute(
                insert(hook_pending).values(
                    session_id=self.session_id, key=key, kind=kind, data_json=blob, created_at=now, updated_at=now
                )
            )

    def pop(self, key: str) -> dict[str, Any] | None:
        """Remove the pending event ``key`` and return its data (``None`` if there was none)."""
        data = self.get(key)
        if data is not None:
            self._conn.execute(delete(hook_pending).where(self._where(key)))
        return data

    def items(self, kind: str | None = None) -> list[PendingEvent]:
        """Pending events (of ``kind``, or all) in the order they were first recorded."""
        q = select(hook_pending.c.key, hook_pending.c.kind, hook_pending.c.data_json).where(
            hook_pending.c.session_id == self.session_id
        )
        if kind is not None:
            q = q.where(hook_pending.c.kind == kind)
        rows = self._conn.execute(q.order_by(hook_pending.c.created_at, hook_pending.c.key)).all()
        return [PendingEvent(k, kd, json.loads(d)) for k, kd, d in rows]

    def append(self, items: Sequence[dict[str, Any]]) -> list[tuple[Step, bool]]:
        """Append steps (same rules as :meth:`TrajectoryRepository.log_steps`); returns ``(step, created)``
        per item. Raises :class:`~._common.StoreError` when the trajectory is finished."""
        prepared, counts = self._trajectories._prepare(items, redact=True)
        self.redactions.update(counts)
        res = self._trajectories._append_locked(self._conn, self.session_id, self._status, self._step_count, prepared)
        self._step_count = res.step_count
        out = list(zip(res.steps, res.created, strict=True))
        self.appended.extend(out)
        return out


class HookEventRepository:
    """Pending hook events, always handled inside :meth:`transaction`."""

    def __init__(self, engine: Engine, trajectories: TrajectoryRepository):
        self.engine = engine
        self._trajectories = trajectories

    @contextmanager
    def transaction(self, session_id: str) -> Iterator[HookEventTx]:
        """A transaction holding the trajectory's write lock (``BEGIN IMMEDIATE`` on SQLite, ``SELECT ...
        FOR UPDATE`` on PostgreSQL); commits on a normal exit, rolls back on an exception. Raises
        :class:`~._common.StoreError` for an unknown trajectory."""
        with self.engine.begin() as conn:
            row = self._trajectories._row(conn, session_id, lock=True)
            yield HookEventTx(self._trajectories, conn, session_id, row["status"], row["step_count"])
