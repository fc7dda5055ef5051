"""A sandbox episode's start, in one transaction: what ``sandbox_reset`` records.

A reset (or a new sandbox) used to be four to six transactions: read the old trajectory's agent,
close the old trajectory unpassed (:meth:`~._trajectories.TrajectoryRepository.finish`), start a new
one (:meth:`~._trajectories.TrajectoryRepository.start`), write the sandbox row
(:meth:`~._sandboxes.SandboxRepository.add` / ``update``) and append the reset step
(:meth:`~._trajectories.TrajectoryRepository.append_steps`). :func:`begin_episode` writes the same
rows (the same columns and values; one commit time for all of them) in one transaction, so a crash
leaves the old episode or the new one, never half of each.

On SQLite it goes through the plain DB-API connection of :class:`~._sqlite_direct.DirectSqlite`
(``BEGIN IMMEDIATE``, no SQLAlchemy statement compilation: about 0.3 ms where the separate calls
cost 3-5 ms at load 5); when that connection is in use or the write lock is held it falls back to
one SQLAlchemy transaction, which waits for the lock (busy timeout). PostgreSQL takes the
SQLAlchemy transaction, locking the old trajectory's row (``FOR UPDATE``) before it is closed.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select, update

from agent_rl_sandbox.schemas.trajectory import AgentInfo
from agent_rl_sandbox.tools.errors import WouldWait
from agent_rl_sandbox.tools.store._common import new_id, utcnow
from agent_rl_sandbox.tools.store._schema import sandboxes, steps, trajectories

if TYPE_CHECKING:
    from agent_rl_sandbox.tools.store._trajectories import TrajectoryRepository


@dataclass(frozen=True, slots=True)
class NewSandbox:
    """The sandbox row to insert when the episode is a new sandbox's first."""

    path: str
    owner: str | None


@dataclass(frozen=True, slots=True)
class EpisodeStart:
    """What :func:`begin_episode` wrote: the new trajectory and the agent name it carries."""

    session_id: str
    agent_name: str
    abandoned: bool
    """Whether the previous trajectory was running and has been closed (reward 0, not passed)."""


def _abandon_values(now: str) -> dict[str, Any]:
    """The columns :meth:`TrajectoryRepository.finish` sets for an abandoned episode
    (``final_message=None, reward=0.0, passed=False, self_report_only=False``)."""
    return dict(
        status="finished",
        finished_at=now,
        final_message=None,
        reward=0.0,
        passed=False,
        self_report_only=False,
        reward_components_json=json.dumps({}, sort_keys=True),
        score_json=None,
    )


def begin_episode(
    repo: TrajectoryRepository,
    *,
    sandbox_id: str,
    task_id: str,
    behaviour: str | None,
    split: str | None,
    owner: str | None,
    agent_name: str | None,
    isolation: str,
    base_commit: str,
    step: dict[str, Any],
    new: NewSandbox | None = None,
    previous: str | None = None,
    abandon: bool = False,
) -> EpisodeStart:
    """Record a sandbox episode's start in one transaction (see the module docstring).

    ``new`` inserts the sandbox row (a new sandbox; its ``claims`` empty, ``created_at`` now), else
    the existing row ``sandbox_id`` gets ``session_id``, ``status="open"``, ``isolation``,
    ``base_commit``, empty claims and a new ``updated_at``. ``previous`` is the sandbox's last
    trajectory: ``agent_name=None`` takes its agent's name (else ``"unknown"``), and with
    ``abandon`` it is closed unpassed when still running. ``step`` (a partial step, redacted and
    validated here, before any lock) becomes step 1 of the new trajectory, whose ``owner`` is
    ``owner`` and ``origin`` ``"sandbox"``. Raises :class:`~._common.StoreError` for a malformed
    step or an unknown ``previous`` (nothing written), ``sqlalchemy.exc.IntegrityError`` for a
    taken ``sandbox_id`` of a new sandbox."""
    prepared, _ = repo._prepare([step], redact=True)
    sid = new_id("traj")
    args: dict[str, Any] = dict(
        sandbox_id=sandbox_id,
        task_id=task_id,
        behaviour=behaviour,
        split=split,
        owner=owner,
        agent_name=agent_name,
        isolation=isolation,
        base_commit=base_commit,
        new=new,
        previous=previous,
        abandon=abandon,
    )
    if repo._direct is not None:
        try:
            with repo._direct.write() as conn:
                return _direct(repo, conn, sid, prepared, **args)
        except WouldWait:
            pass  # nothing written: the waiting transaction below does it
    with repo.engine.begin() as conn:
        return _alchemy(repo, conn, sid, prepared, **args)


def _rows(
    repo: TrajectoryRepository,
    sid: str,
    prepared: list,
    agent_name: str,
    now: str,
    *,
    sandbox_id: str,
    task_id: str,
    behaviour: str | None,
    split: str | None,
    owner: str | None,
    isolation: str,
    base_commit: str,
    new: NewSandbox | None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The new trajectory row, its step row, and the sandbox row's values (insert, update)."""
    traj = repo._new_row(
        sid,
        AgentInfo(name=agent_name),
        task_id=task_id,
        behaviour=behaviour,
        split=split,
        sandbox_id=sandbox_id,
        parent_session_id=None,
        origin="sandbox",
        external_id=None,
        meta=None,
        owner=owner,
        created_at=now,
    )
    step_rows, _ = repo._number(sid, prepared, {}, 1, now)
    traj["step_count"] = len(step_rows)
    fields = dict(session_id=sid, status="open", isolation=isolation, base_commit=base_commit)
    ins: dict[str, Any] = dict(
        sandbox_id=sandbox_id, task_id=task_id, path="", claims_json="[]", created_at=now, updated_at=now
    )
    if new is not None:
        ins.update(path=new.path, owner=new.owner)
    upd = dict(claims_json="[]", updated_at=now)
    return traj, step_rows[0], {**ins, **fields}, {**upd, **fields}


def _resolve_agent(agent_name: str | None, previous_agent_json: str | None) -> str:
    if agent_name is None and previous_agent_json is not None:
        agent_name = AgentInfo.model_validate_json(previous_agent_json).name
    return agent_name or "unknown"


def _direct(
    repo: TrajectoryRepository,
    conn: sqlite3.Connection,
    sid: str,
    prepared: list,
    *,
    agent_name: str | None,
    previous: str | None,
    abandon: bool,
    new: NewSandbox | None,
    sandbox_id: str,
    **kw: Any,
) -> EpisodeStart:
    now = utcnow()
    prev_json, abandoned = None, False
    if previous is not None:
        row = conn.execute("SELECT agent_json, status FROM trajectories WHERE session_id = ?", (previous,)).fetchone()
        if row is None:
            repo._unknown(previous)
        prev_json = row[0]
        if abandon and row[1] == "running":
            vals = _abandon_values(now)
            conn.execute(
                f"UPDATE trajectories SET {', '.join(f'{k} = ?' for k in vals)} WHERE session_id = ?",
                (*vals.values(), previous),
            )
            abandoned = True
    name = _resolve_agent(agent_name, prev_json)
    traj, step_row, ins, upd = _rows(repo, sid, prepared, name, now, sandbox_id=sandbox_id, new=new, **kw)
    for table, values in (("trajectories", traj), ("steps", step_row)) + ((("sandboxes", ins),) if new else ()):
        marks = ", ".join("?" * len(values))
        conn.execute(f"INSERT INTO {table} ({', '.join(values)}) VALUES ({marks})", tuple(values.values()))
    if new is None:
        conn.execute(
            f"UPDATE sandboxes SET {', '.join(f'{k} = ?' for k in upd)} WHERE sandbox_id = ?",
            (*upd.values(), sandbox_id),
        )
    return EpisodeStart(sid, name, abandoned)


def _alchemy(
    repo: TrajectoryRepository,
    conn: Any,
    sid: str,
    prepared: list,
    *,
    agent_name: str | None,
    previous: str | None,
    abandon: bool,
    new: NewSandbox | None,
    sandbox_id: str,
    **kw: Any,
) -> EpisodeStart:
    now = utcnow()
    prev_json, abandoned = None, False
    if previous is not None:
        q = select(trajectories.c.agent_json, trajectories.c.status).where(trajectories.c.session_id == previous)
        if repo.dialect == "postgresql":
            q = q.with_for_update()
        row = conn.execute(q).first()
        if row is None:
            repo._unknown(previous)
        prev_json = row[0]
        if abandon and row[1] == "running":
            conn.execute(
                update(trajectories).where(trajectories.c.session_id == previous).values(**_abandon_values(now))
            )
            abandoned = True
    name = _resolve_agent(agent_name, prev_json)
    traj, step_row, ins, upd = _rows(repo, sid, prepared, name, now, sandbox_id=sandbox_id, new=new, **kw)
    conn.execute(insert(trajectories).values(**traj))
    conn.execute(insert(steps).values(**step_row))
    if new is not None:
        conn.execute(insert(sandboxes).values(**ins))
    else:
        conn.execute(update(sandboxes).where(sandboxes.c.sandbox_id == sandbox_id).values(**upd))
    return EpisodeStart(sid, name, abandoned)
