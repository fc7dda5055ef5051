"""The sandboxes repository: one row per sandbox, returned as a frozen :class:`SandboxRecord`.

A sandbox row names its task, the trajectory of its current episode, where its working copy lives, the
commit it resets to, its status (``open``, ``finished``, ``expired``), the isolation it was created
under and the paths claimed during the episode. Writes are single-row transactions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine

from agent_rl_sandbox.tools.errors import WouldWait
from agent_rl_sandbox.tools.store._common import StoreError, utcnow
from agent_rl_sandbox.tools.store._schema import sandboxes
from agent_rl_sandbox.tools.store._sqlite_direct import DirectSqlite

_FIELDS = ("task_id", "session_id", "path", "base_commit", "status", "isolation", "claims")
_GET = f"SELECT {', '.join(c.name for c in sandboxes.columns)} FROM sandboxes WHERE sandbox_id = ?"


@dataclass(frozen=True, slots=True)
class SandboxRecord:
    """One stored sandbox."""

    sandbox_id: str
    task_id: str
    """The task this sandbox holds (fixed for its life)."""
    session_id: str
    """The trajectory of the current (or last) episode (always written; the column is nullable only
    because a sandbox row and its first trajectory are created in two steps)."""
    path: str
    """The sandbox's root folder (``<home>/sandboxes/<sandbox_id>``)."""
    base_commit: str
    """The git commit a reset returns the working copy to."""
    status: str
    """``open``, ``finished`` or ``expired``."""
    isolation: str
    """The isolation kind the episode started under (``bubblewrap``, ``none``, ...)."""
    claims: tuple[str, ...]
    """Repo-relative paths claimed in this episode, in claim order."""
    created_at: str
    updated_at: str
    owner: str | None = None
    """The owner id of the caller that created the sandbox (``None``: made before owners were stored)."""


def _record(row: Any) -> SandboxRecord:
    return SandboxRecord(
        sandbox_id=row["sandbox_id"],
        task_id=row["task_id"],
        session_id=row["session_id"],
        path=row["path"],
        base_commit=row["base_commit"],
        status=row["status"],
        isolation=row["isolation"],
        claims=tuple(json.loads(row["claims_json"])),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        owner=row["owner"],
    )


class SandboxRepository:
    """Sandbox rows. Thread- and process-safe; raises :class:`StoreError` for an unknown sandbox id."""

    def __init__(self, engine: Engine, direct: DirectSqlite | None = None):
        self.engine = engine
        self._read = engine.execution_options(readonly=True)
        self._direct = direct
        """SQLite: the store's plain DB-API connection, for :meth:`get` (no statement compilation)."""

    @staticmethod
    def _values(values: dict[str, Any]) -> dict[str, Any]:
        bad = set(values) - set(_FIELDS)
        if bad:
            raise ValueError(f"unknown sandbox field(s) {sorted(bad)}; known: {', '.join(_FIELDS)}")
        if "claims" in values:
            values["claims_json"] = json.dumps(list(values.pop("claims")))
        return values

    def add(
        self,
        *,
        sandbox_id: str,
        task_id: str,
        path: str,
        base_commit: str,
        status: str,
        isolation: str,
        session_id: str,
        owner: str | None = None,
    ) -> None:
        """Insert a new sandbox with no claims. Raises ``sqlalchemy.exc.IntegrityError`` for
        a taken ``sandbox_id`` or an unknown ``session_id``."""
        now = utcnow()
        with self.engine.begin() as conn:
            conn.execute(
                insert(sandboxes).values(
                    sandbox_id=sandbox_id,
                    task_id=task_id,
                    session_id=session_id,
                    path=path,
                    base_commit=base_commit,
                    status=status,
                    isolation=isolation,
                    claims_json="[]",
                    created_at=now,
                    updated_at=now,
                    owner=owner,
                )  # fmt: skip
            )

    def get(self, sandbox_id: str) -> SandboxRecord:
        """The stored sandbox. Raises :class:`StoreError` if unknown. On SQLite it reads through the
        store's plain DB-API connection when that is free (the same row), else through SQLAlchemy."""
        row: Any = None
        try:
            if self._direct is None:
                raise WouldWait("no direct connection")
            row = self._direct.row(_GET, (sandbox_id,))
        except WouldWait:
            with self._read.connect() as conn:
                row = conn.execute(select(sandboxes).where(sandboxes.c.sandbox_id == sandbox_id)).mappings().first()
        if row is None:
            raise StoreError(f"unknown sandbox {sandbox_id!r}", "call sandbox_reset with a task id to create a sandbox")
        return _record(row)

    def update(self, sandbox_id: str, **values: Any) -> None:
        """Set fields of a sandbox (any of ``task_id``, ``session_id``, ``path``, ``base_commit``,
        ``status``, ``isolation``, ``claims``) and bump ``updated_at``. Raises ``ValueError`` for an
        unknown field name. Updating an unknown id changes nothing."""
        values = self._values(dict(values))
        with self.engine.begin() as conn:
            conn.execute(
                update(sandboxes).where(sandboxes.c.sandbox_id == sandbox_id).values(updated_at=utcnow(), **values)
            )

    def list(self, status: str | None = None) -> list[SandboxRecord]:
        """Every sandbox (or those with ``status``), oldest first."""
        q = select(sandboxes)
        if status is not None:
            q = q.where(sandboxes.c.status == status)
        with self._read.connect() as conn:
            return [_record(r) for r in conn.execute(q.order_by(sandboxes.c.created_at)).mappings()]
