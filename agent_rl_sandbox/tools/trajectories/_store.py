"""The trajectory store: one SQLAlchemy Core schema for SQLite (WAL, embedded default) and PostgreSQL.

Steps are append-only and numbered densely per trajectory; a client may pass ``client_step_id`` so a
retried call does not duplicate a step. A finished trajectory is immutable. Appends take a write
lock first (``BEGIN IMMEDIATE`` on SQLite, ``SELECT ... FOR UPDATE`` on PostgreSQL) so concurrent
writers never collide on a step number.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine

from agent_rl_sandbox.schemas.trajectory import AgentInfo, Step, Trajectory, TrajectorySummary
from agent_rl_sandbox.tools.errors import ActionError

metadata = MetaData()

trajectories = Table(
    "trajectories",
    metadata,
    Column("session_id", String(64), primary_key=True),
    Column("agent_json", Text, nullable=False),
    Column("task_id", String(200), index=True),
    Column("behaviour", String(100), index=True),
    Column("split", String(16)),
    Column("sandbox_id", String(64), index=True),
    Column("status", String(16), nullable=False, default="running"),
    Column("created_at", String(40), nullable=False),
    Column("finished_at", String(40)),
    Column("step_count", Integer, nullable=False, default=0),
    Column("reward", Float),
    Column("passed", Boolean),
    Column("self_report_only", Boolean),
    Column("final_message", Text),
    Column("parent_session_id", String(64)),
    Column("reward_components_json", Text),
    Column("score_json", Text),
)

steps = Table(
    "steps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(64), ForeignKey("trajectories.session_id"), nullable=False),
    Column("step_id", Integer, nullable=False),
    Column("client_step_id", String(200)),
    Column("provenance", String(16), nullable=False),
    Column("data_json", Text, nullable=False),
    UniqueConstraint("session_id", "step_id", name="uq_steps_session_step"),
    UniqueConstraint("session_id", "client_step_id", name="uq_steps_session_client_step"),
)

sandboxes = Table(
    "sandboxes",
    metadata,
    Column("sandbox_id", String(64), primary_key=True),
    Column("task_id", String(200), nullable=False),
    Column("session_id", String(64), ForeignKey("trajectories.session_id")),
    Column("path", Text, nullable=False),
    Column("base_commit", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("isolation", String(32), nullable=False),
    Column("claims_json", Text, nullable=False, default="[]"),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
)

Index("ix_steps_session", steps.c.session_id)


class StoreError(ActionError):
    """A store operation that cannot proceed (unknown id, finished trajectory)."""


def utcnow() -> str:
    """Current UTC time as ISO-8601 with microseconds and a ``Z`` suffix."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id(prefix: str) -> str:
    """A random id like ``traj_3f2a...`` (12 hex digits)."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def make_engine(url: str) -> Engine:
    """Create an engine; SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` transactions."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):  # pragma: no cover - exercised by every sqlite test
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):  # pragma: no cover
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True)


class TrajectoryStore:
    """Trajectories, steps and sandboxes in one database.

    All methods are synchronous and safe to call from several threads and processes. Raises
    :class:`StoreError` for unknown ids and writes to finished trajectories.
    """

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        metadata.create_all(self.engine)

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    # -- trajectories -------------------------------------------------------------------------
    def start(
        self,
        *,
        agent: AgentInfo | dict | None = None,
        task_id: str | None = None,
        behaviour: str | None = None,
        split: str | None = None,
        sandbox_id: str | None = None,
        session_id: str | None = None,
        parent_session_id: str | None = None,
    ) -> TrajectorySummary:
        """Create a running trajectory and return its summary."""
        agent_info = agent if isinstance(agent, AgentInfo) else AgentInfo(**(agent or {}))
        sid = session_id or new_id("traj")
        row = dict(
            session_id=sid,
            agent_json=agent_info.model_dump_json(exclude_none=True),
            task_id=task_id,
            behaviour=behaviour,
            split=split,
            sandbox_id=sandbox_id,
            status="running",
            created_at=utcnow(),
            step_count=0,
            parent_session_id=parent_session_id,
        )
        with self._tx() as conn:
            if parent_session_id is not None:
                self._row(conn, parent_session_id)
            conn.execute(insert(trajectories).values(**row))
        return self.summary(sid)

    def _row(self, conn: Connection, session_id: str, *, lock: bool = False):
        q = select(trajectories).where(trajectories.c.session_id == session_id)
        if lock and self.engine.dialect.name == "postgresql":
            q = q.with_for_update()
        row = conn.execute(q).mappings().first()
        if row is None:
            raise StoreError(
                f"unknown trajectory {session_id!r}",
                "call trajectory_list to see ids, or sandbox_reset / trajectory_start to begin one",
            )
        return row

    def append_steps(self, session_id: str, new_steps: list[dict[str, Any]]) -> list[Step]:
        """Append steps atomically; returns the stored steps (with their assigned ``step_id``).

        Each item is a partial step (``Step`` fields without ``step_id``; ``timestamp`` defaults to
        now). Items whose ``client_step_id`` already exists return the stored step instead of a
        duplicate. Raises :class:`StoreError` if the trajectory is unknown or finished, and
        ``pydantic.ValidationError`` on malformed steps (nothing is written then).
        """
        out: list[Step] = []
        with self._tx() as conn:
            row = self._row(conn, session_id, lock=True)
            if row["status"] == "finished":
                raise StoreError(
                    f"trajectory {session_id} is finished and immutable",
                    "start a new trajectory with parent_session_id set to correct it",
                )
            next_id = row["step_count"] + 1
            for item in new_steps:
                cid = item.get("client_step_id")
                if cid is not None:
                    prev = conn.execute(
                        select(steps.c.data_json).where(
                            steps.c.session_id == session_id, steps.c.client_step_id == cid
                        )
                    ).scalar()
                    if prev is not None:
                        out.append(Step.model_validate_json(prev))
                        continue
                data = {"timestamp": utcnow(), **item, "step_id": next_id}
                step = Step.model_validate(data)
                conn.execute(
                    insert(steps).values(
                        session_id=session_id,
                        step_id=step.step_id,
                        client_step_id=step.client_step_id,
                        provenance=step.provenance,
                        data_json=step.model_dump_json(exclude_none=True),
                    )
                )
                out.append(step)
                next_id += 1
            conn.execute(
                update(trajectories)
                .where(trajectories.c.session_id == session_id)
                .values(step_count=next_id - 1)
            )
        return out

    def finish(
        self,
        session_id: str,
        *,
        final_message: str | None = None,
        reward: float | None = None,
        passed: bool | None = None,
        self_report_only: bool | None = None,
        reward_components: dict[str, float] | None = None,
        score: dict | None = None,
    ) -> TrajectorySummary:
        """Close a trajectory (immutable afterwards) and store its final message and score."""
        with self._tx() as conn:
            row = self._row(conn, session_id, lock=True)
            if row["status"] == "finished":
                raise StoreError(f"trajectory {session_id} is already finished", "trajectory_get shows its result")
            conn.execute(
                update(trajectories)
                .where(trajectories.c.session_id == session_id)
                .values(
                    status="finished",
                    finished_at=utcnow(),
                    final_message=final_message,
                    reward=reward,
                    passed=passed,
                    self_report_only=self_report_only,
                    reward_components_json=json.dumps(reward_components or {}, sort_keys=True),
                    score_json=json.dumps(score, sort_keys=True) if score is not None else None,
                )
            )
        return self.summary(session_id)

    def _summary_from_row(self, row) -> TrajectorySummary:
        return TrajectorySummary(
            session_id=row["session_id"],
            agent=AgentInfo.model_validate_json(row["agent_json"]),
            task_id=row["task_id"],
            behaviour=row["behaviour"],
            split=row["split"],
            sandbox_id=row["sandbox_id"],
            status=row["status"],
            created_at=row["created_at"],
            finished_at=row["finished_at"],
            step_count=row["step_count"],
            reward=row["reward"],
            passed=row["passed"],
            self_report_only=row["self_report_only"],
            final_message=row["final_message"],
            parent_session_id=row["parent_session_id"],
        )

    def summary(self, session_id: str) -> TrajectorySummary:
        with self.engine.connect() as conn:
            return self._summary_from_row(self._row(conn, session_id))

    def get(self, session_id: str) -> Trajectory:
        """The whole trajectory with its steps in order. Raises :class:`StoreError` if unknown."""
        with self.engine.connect() as conn:
            row = self._row(conn, session_id)
            datas = conn.execute(
                select(steps.c.data_json).where(steps.c.session_id == session_id).order_by(steps.c.step_id)
            ).scalars()
            step_list = [Step.model_validate_json(d) for d in datas]
        summary = self._summary_from_row(row)
        comps = json.loads(row["reward_components_json"]) if row["reward_components_json"] else {}
        return Trajectory(**summary.model_dump(), steps=step_list, reward_components=comps)

    def score_json(self, session_id: str) -> dict | None:
        with self.engine.connect() as conn:
            row = self._row(conn, session_id)
        return json.loads(row["score_json"]) if row["score_json"] else None

    def list(
        self,
        *,
        task_id: str | None = None,
        behaviour: str | None = None,
        agent_name: str | None = None,
        passed: bool | None = None,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[TrajectorySummary], int]:
        """Summaries matching the filters, newest first, plus the total count before paging."""
        q = select(trajectories)
        conds = []
        if task_id is not None:
            conds.append(trajectories.c.task_id == task_id)
        if behaviour is not None:
            conds.append(trajectories.c.behaviour == behaviour)
        if passed is not None:
            conds.append(trajectories.c.passed == passed)
        if status is not None:
            conds.append(trajectories.c.status == status)
        if agent_name is not None:
            conds.append(trajectories.c.agent_json.contains(json.dumps(agent_name)))
        for c in conds:
            q = q.where(c)
        with self.engine.connect() as conn:
            total = conn.execute(select(func.count()).select_from(q.subquery())).scalar_one()
            rows = conn.execute(
                q.order_by(trajectories.c.created_at.desc(), trajectories.c.session_id).limit(limit).offset(offset)
            ).mappings()
            return [self._summary_from_row(r) for r in rows], total

    # -- sandboxes ----------------------------------------------------------------------------
    def add_sandbox(self, **row) -> None:
        now = utcnow()
        with self._tx() as conn:
            conn.execute(insert(sandboxes).values(created_at=now, updated_at=now, claims_json="[]", **row))

    def sandbox(self, sandbox_id: str) -> dict:
        """The sandbox row as a dict (``claims`` decoded). Raises :class:`StoreError` if unknown."""
        with self.engine.connect() as conn:
            row = conn.execute(select(sandboxes).where(sandboxes.c.sandbox_id == sandbox_id)).mappings().first()
        if row is None:
            raise StoreError(
                f"unknown sandbox {sandbox_id!r}", "call sandbox_reset with a task id to create a sandbox"
            )
        d = dict(row)
        d["claims"] = json.loads(d.pop("claims_json"))
        return d

    def update_sandbox(self, sandbox_id: str, **values) -> None:
        if "claims" in values:
            values["claims_json"] = json.dumps(values.pop("claims"))
        with self._tx() as conn:
            conn.execute(
                update(sandboxes).where(sandboxes.c.sandbox_id == sandbox_id).values(updated_at=utcnow(), **values)
            )

    def list_sandboxes(self, status: str | None = None) -> list[dict]:
        q = select(sandboxes)
        if status is not None:
            q = q.where(sandboxes.c.status == status)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q.order_by(sandboxes.c.created_at)).mappings()]

    def close(self) -> None:
        self.engine.dispose()
