"""The trajectory store: one SQLAlchemy Core schema for SQLite (WAL, embedded default) and PostgreSQL.

Steps are append-only and numbered densely per trajectory; a client may pass ``client_step_id`` so a
retried call does not duplicate a step. A finished trajectory is immutable (a correction is a new
trajectory whose ``parent_session_id`` names the old one). Appends take a write lock first (``BEGIN
IMMEDIATE`` on SQLite, ``SELECT ... FOR UPDATE`` of the trajectory row on PostgreSQL) so concurrent
writers never collide on a step number, and each append is one transaction: a writer killed mid-batch
leaves either the whole batch or none of it.

Every step and final message is passed through the secret :class:`~._redact.Redactor` before it is
written, whoever writes it (sandbox tools, ``trajectory_log_step``, the hook command, importers).

Opening a store is cheap when the schema is current: one read of the ``ars_meta`` version row. Otherwise
the tables are created (or migrated: missing columns added) under a lock, once.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
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
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

from agent_rl_sandbox.schemas.trajectory import AgentInfo, Step, Trajectory, TrajectorySummary
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.trajectories._integrity import step_problems

log = logging.getLogger(__name__)

SCHEMA_VERSION = "2"
"""Bumped whenever a table or column is added; :meth:`TrajectoryStore._ensure_schema` migrates up."""

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
    # schema version 2
    Column("agent_name", String(200), index=True),
    Column("external_id", String(200), index=True),
    Column("origin", String(40)),
    Column("meta_json", Text),
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

hook_pending = Table(
    "hook_pending",
    metadata,
    Column("session_id", String(64), ForeignKey("trajectories.session_id"), nullable=False),
    Column("key", String(200), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("data_json", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
    PrimaryKeyConstraint("session_id", "key", name="pk_hook_pending"),
)
"""Hook events waiting for their partner: a PreToolUse until its PostToolUse, a Stop until the turn
really ends. Rows are redacted like steps and deleted when they become steps."""

ars_meta = Table(
    "ars_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

Index("ix_steps_session", steps.c.session_id)
Index("ix_trajectories_created", trajectories.c.created_at)

_V2_COLUMNS = ("agent_name", "external_id", "origin", "meta_json")
_SCHEMA_LOCK_ID = 7_243_110_591
"""PostgreSQL advisory lock taken while creating or migrating tables."""

OUTCOMES = ("passed", "failed", "unscored", "running")
"""Values of the ``outcome`` filter of :meth:`TrajectoryStore.list`."""


class StoreError(ActionError):
    """A store operation that cannot proceed (unknown id, finished trajectory, malformed step)."""


def utcnow() -> str:
    """Current UTC time as ISO-8601 with microseconds and a ``Z`` suffix."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id(prefix: str) -> str:
    """A random id like ``traj_3f2a...`` (12 hex digits)."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def normalise_time(value: str) -> str:
    """An ISO-8601 time (``2026-11-29``, ``2026-11-29T12:00:00+02:00``...) in the store's UTC form, so it
    compares correctly with stored ``created_at`` strings. Raises ``ValueError`` for anything else."""
    v = value.strip()
    if v.endswith("Z"):
        v = v[:-1] + "+00:00"
    dt = datetime.fromisoformat(v)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def make_engine(url: str, busy_timeout_s: float | None = None) -> Engine:
    """Create an engine. SQLite gets WAL, a busy timeout and ``BEGIN IMMEDIATE`` write transactions
    (reads issued with the ``readonly`` execution option use a plain deferred ``BEGIN``).

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
            conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("readonly") else "BEGIN IMMEDIATE")

        return engine
    if busy_timeout_s is not None:
        ms = max(1, int(busy_timeout_s * 1000))
        return create_engine(
            url, pool_pre_ping=True,
            connect_args={"connect_timeout": max(1, int(busy_timeout_s)), "options": f"-c lock_timeout={ms}"},
        )
    return create_engine(url, pool_pre_ping=True)


@dataclass
class _Prepared:
    step: Step
    has_ts: bool
    data: dict[str, Any]
    """The step as stored (JSON-ready), with placeholder ``step_id``/``timestamp``."""


def _finished(session_id: str) -> StoreError:
    return StoreError(
        f"trajectory {session_id} is finished and immutable",
        "start a new trajectory with parent_session_id set to correct it",
    )


@dataclass
class AppendResult:
    """What :meth:`TrajectoryStore.log_steps` did: the steps in input order (stored ones for retried
    ``client_step_id`` values), which of them this call created, and the secrets redacted."""

    steps: list[Step]
    created: list[bool]
    redactions: Counter[str] = field(default_factory=Counter)
    step_count: int = 0


class PendingTx:
    """Hook bookkeeping inside one locked transaction on one trajectory (see :meth:`TrajectoryStore.pending`).

    ``put``/``pop``/``items`` manage pending events; ``append`` adds steps in the same transaction, so
    a pre-tool event and the step that replaces it change together or not at all.
    """

    def __init__(self, store: TrajectoryStore, conn: Connection, session_id: str, row):
        self._store = store
        self._conn = conn
        self.session_id = session_id
        self.row = row
        self.redactions: Counter[str] = Counter()
        self.appended: list[tuple[Step, bool]] = []

    def get(self, key: str) -> dict | None:
        data = self._conn.execute(
            select(hook_pending.c.data_json).where(
                hook_pending.c.session_id == self.session_id, hook_pending.c.key == key
            )
        ).scalar()
        return json.loads(data) if data is not None else None

    def put(self, key: str, kind: str, data: dict) -> None:
        """Insert or replace a pending event (redacted first)."""
        data, counts = self._store.redactor.value(data)
        self.redactions.update(counts)
        now = utcnow()
        blob = json.dumps(data, sort_keys=True, default=str)
        exists = self._conn.execute(
            select(hook_pending.c.key).where(hook_pending.c.session_id == self.session_id, hook_pending.c.key == key)
        ).first()
        if exists:
            self._conn.execute(
                update(hook_pending)
                .where(hook_pending.c.session_id == self.session_id, hook_pending.c.key == key)
                .values(data_json=blob, updated_at=now)
            )
        else:
            self._conn.execute(
                insert(hook_pending).values(
                    session_id=self.session_id, key=key, kind=kind, data_json=blob, created_at=now, updated_at=now
                )
            )

    def pop(self, key: str) -> dict | None:
        data = self.get(key)
        if data is not None:
            self._conn.execute(
                delete(hook_pending).where(hook_pending.c.session_id == self.session_id, hook_pending.c.key == key)
            )
        return data

    def items(self, kind: str | None = None) -> list[tuple[str, str, dict]]:
        """Pending ``(key, kind, data)`` in the order they were first recorded."""
        q = select(hook_pending.c.key, hook_pending.c.kind, hook_pending.c.data_json).where(
            hook_pending.c.session_id == self.session_id
        )
        if kind is not None:
            q = q.where(hook_pending.c.kind == kind)
        rows = self._conn.execute(q.order_by(hook_pending.c.created_at, hook_pending.c.key)).all()
        return [(k, kd, json.loads(d)) for k, kd, d in rows]

    def append(self, items: Sequence[dict[str, Any]]) -> list[tuple[Step, bool]]:
        """Append steps (same rules as :meth:`TrajectoryStore.log_steps`); returns ``(step, created)``."""
        prepared, counts = self._store._prepare(items, redact=True)
        self.redactions.update(counts)
        res = self._store._append_locked(self._conn, self.session_id, self.row, prepared)
        self.row = {**self.row, "step_count": res.step_count}
        out = list(zip(res.steps, res.created, strict=True))
        self.appended.extend(out)
        return out


class TrajectoryStore:
    """Trajectories, steps, sandboxes and pending hook events in one database.

    All methods are synchronous and safe to call from several threads and processes. Raises
    :class:`StoreError` for unknown ids, writes to finished trajectories and malformed steps.
    """

    def __init__(self, url: str, *, busy_timeout_s: float | None = None):
        self.url = url
        self.engine = make_engine(url, busy_timeout_s)
        self._read = self.engine.execution_options(readonly=True)
        self._redactor = None
        self._ensure_schema()

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    @property
    def redactor(self):
        """The secret redactor (built on first use: importing detect-secrets costs ~0.1 s)."""
        if self._redactor is None:
            from agent_rl_sandbox.tools.trajectories._redact import Redactor

            self._redactor = Redactor()
        return self._redactor

    # -- schema --------------------------------------------------------------------------------
    def _ensure_schema(self) -> None:
        try:
            with self._read.connect() as conn:
                current = conn.execute(select(ars_meta.c.value).where(ars_meta.c.key == "schema_version")).scalar()
            if current == SCHEMA_VERSION:
                return
        except DBAPIError:
            current = None  # no ars_meta table yet
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK_ID})
            metadata.create_all(conn)
            self._migrate(conn)
            found = conn.execute(select(ars_meta.c.value).where(ars_meta.c.key == "schema_version")).scalar()
            if found is None:
                conn.execute(insert(ars_meta).values(key="schema_version", value=SCHEMA_VERSION))
            elif found != SCHEMA_VERSION:
                conn.execute(update(ars_meta).where(ars_meta.c.key == "schema_version").values(value=SCHEMA_VERSION))

    def _migrate(self, conn: Connection) -> None:
        """Bring tables created by an older version up to :data:`SCHEMA_VERSION` (add columns, indexes,
        backfill ``agent_name``). Idempotent."""
        have = {c["name"] for c in inspect(conn).get_columns("trajectories")}
        added = False
        for name in _V2_COLUMNS:
            if name not in have:
                col = trajectories.c[name]
                ddl = col.type.compile(dialect=conn.dialect)
                conn.execute(text(f"ALTER TABLE trajectories ADD COLUMN {name} {ddl}"))
                added = True
        if added:
            for ix in trajectories.indexes:
                ix.create(conn, checkfirst=True)
            rows = conn.execute(
                select(trajectories.c.session_id, trajectories.c.agent_json).where(trajectories.c.agent_name.is_(None))
            ).all()
            for sid, agent_json in rows:
                try:
                    name = json.loads(agent_json).get("name")
                except (ValueError, AttributeError):
                    name = None
                conn.execute(update(trajectories).where(trajectories.c.session_id == sid).values(agent_name=name))
            conn.execute(
                update(trajectories)
                .where(trajectories.c.origin.is_(None), trajectories.c.sandbox_id.is_not(None))
                .values(origin="sandbox")
            )
            log.info("migrated trajectory store to schema version %s (%d rows backfilled)", SCHEMA_VERSION, len(rows))

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    # -- trajectories -------------------------------------------------------------------------
    def _new_row(
        self,
        sid: str,
        agent_info: AgentInfo,
        *,
        task_id,
        behaviour,
        split,
        sandbox_id,
        parent_session_id,
        origin,
        external_id,
        meta,
    ) -> dict:
        return dict(
            session_id=sid,
            agent_json=agent_info.model_dump_json(exclude_none=True),
            agent_name=agent_info.name,
            task_id=task_id,
            behaviour=behaviour,
            split=split,
            sandbox_id=sandbox_id,
            status="running",
            created_at=utcnow(),
            step_count=0,
            parent_session_id=parent_session_id,
            origin=origin,
            external_id=external_id,
            meta_json=json.dumps(meta, sort_keys=True, default=str) if meta else None,
        )

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
        origin: str | None = None,
        external_id: str | None = None,
        meta: dict | None = None,
    ) -> TrajectorySummary:
        """Create a running trajectory and return its summary. Raises :class:`StoreError` for an
        unknown ``parent_session_id`` and ``sqlalchemy.exc.IntegrityError`` for a taken ``session_id``."""
        agent_info = agent if isinstance(agent, AgentInfo) else AgentInfo(**(agent or {}))
        sid = session_id or new_id("traj")
        if origin is None and sandbox_id is not None:
            origin = "sandbox"
        if meta:
            meta, _ = self.redactor.value(meta)
        row = self._new_row(
            sid, agent_info, task_id=task_id, behaviour=behaviour, split=split, sandbox_id=sandbox_id,
            parent_session_id=parent_session_id, origin=origin, external_id=external_id, meta=meta,
        )
        with self._tx() as conn:
            if parent_session_id is not None:
                self._row(conn, parent_session_id)
            conn.execute(insert(trajectories).values(**row))
        return self.summary(sid)

    def start_or_resume_external(
        self,
        external_id: str,
        *,
        agent: AgentInfo | dict | None = None,
        origin: str | None = None,
        meta: dict | None = None,
        task_id: str | None = None,
        behaviour: str | None = None,
        split: str | None = None,
    ) -> tuple[TrajectorySummary, bool]:
        """The running trajectory recorded for a client session (``external_id``), created if there is
        none. A session whose trajectory was already finished (a resumed Claude Code session) gets a new
        trajectory whose ``parent_session_id`` is the previous one. Safe under concurrent callers: the
        lookup and insert hold the write lock (SQLite) or an advisory lock on the id (PostgreSQL).
        Returns ``(summary, created)``."""
        agent_info = agent if isinstance(agent, AgentInfo) else AgentInfo(**(agent or {}))
        with self._read.connect() as conn:  # the common case (a running trajectory) takes no write lock
            found = conn.execute(
                select(trajectories.c.session_id)
                .where(trajectories.c.external_id == external_id, trajectories.c.status == "running")
                .order_by(trajectories.c.created_at.desc(), trajectories.c.session_id.desc())
            ).first()
        if found is not None:
            return self.summary(found[0]), False
        with self._tx() as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:x))"), {"x": external_id})
            rows = conn.execute(
                select(trajectories.c.session_id, trajectories.c.status)
                .where(trajectories.c.external_id == external_id)
                .order_by(trajectories.c.created_at.desc(), trajectories.c.session_id.desc())
            ).all()
            sid = next((s for s, status in rows if status == "running"), None)
            created = sid is None
            if created:
                parent = rows[0][0] if rows else None
                if meta:
                    meta, _ = self.redactor.value(meta)
                sid = new_id("traj")
                conn.execute(
                    insert(trajectories).values(
                        **self._new_row(
                            sid, agent_info, task_id=task_id, behaviour=behaviour, split=split, sandbox_id=None,
                            parent_session_id=parent, origin=origin, external_id=external_id, meta=meta,
                        )
                    )
                )
        return self.summary(sid), created

    def _row(self, conn: Connection, session_id: str, *, lock: bool = False):
        q = select(trajectories).where(trajectories.c.session_id == session_id)
        if lock and self.dialect == "postgresql":
            q = q.with_for_update()
        row = conn.execute(q).mappings().first()
        if row is None:
            raise StoreError(
                f"unknown trajectory {session_id!r}",
                "call trajectory_list to see ids, or sandbox_reset / trajectory_start to begin one",
            )
        return row

    def update_meta(self, session_id: str, **values: Any) -> None:
        """Set descriptive columns of a running trajectory (``task_id``, ``behaviour``, ``split``,
        ``sandbox_id``, ``agent``). Steps are untouched. Raises :class:`StoreError` when finished."""
        allowed = {"task_id", "behaviour", "split", "sandbox_id", "agent"}
        bad = set(values) - allowed
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        if "agent" in values:
            agent = values.pop("agent")
            info = agent if isinstance(agent, AgentInfo) else AgentInfo(**agent)
            values["agent_json"] = info.model_dump_json(exclude_none=True)
            values["agent_name"] = info.name
        with self._tx() as conn:
            row = self._row(conn, session_id, lock=True)
            if row["status"] == "finished":
                raise StoreError(f"trajectory {session_id} is finished and immutable", "start a new trajectory")
            conn.execute(update(trajectories).where(trajectories.c.session_id == session_id).values(**values))

    # -- steps --------------------------------------------------------------------------------
    def _prepare(self, items: Sequence[dict[str, Any]], *, redact: bool) -> tuple[list[_Prepared], Counter]:
        """Validate, redact and serialise outside any lock."""
        counts: Counter[str] = Counter()
        out: list[_Prepared] = []
        for i, item in enumerate(items):
            item = dict(item)
            item.pop("step_id", None)  # the store numbers steps
            has_ts = bool(item.get("timestamp"))
            data = {"timestamp": item.get("timestamp") or "", **item, "step_id": 1}
            if redact:
                data, c = self.redactor.value(data)
                counts.update(c)
            step = Step.model_validate(data)
            problems = step_problems(step)
            if problems:
                raise StoreError(
                    f"step {i} is malformed: {'; '.join(problems)}",
                    "give each tool call of a step its own tool_call_id and point each observation result "
                    "at one of them (or at none)",
                )
            out.append(_Prepared(step, has_ts, step.model_dump(mode="json", exclude_none=True)))
        return out, counts

    @staticmethod
    def _existing(conn: Connection, session_id: str, cids: list[str]) -> dict[str, Step]:
        found: dict[str, Step] = {}
        uniq = list(dict.fromkeys(cids))
        for i in range(0, len(uniq), 500):
            for cid, data in conn.execute(
                select(steps.c.client_step_id, steps.c.data_json).where(
                    steps.c.session_id == session_id, steps.c.client_step_id.in_(uniq[i : i + 500])
                )
            ).all():
                found[cid] = Step.model_validate_json(data)
        return found

    @staticmethod
    def _fresh_count(prepared: list[_Prepared], existing: dict[str, Step]) -> int:
        seen: set[str] = set()
        n = 0
        for p in prepared:
            cid = p.step.client_step_id
            if cid is None:
                n += 1
            elif cid not in existing and cid not in seen:
                seen.add(cid)
                n += 1
        return n

    @staticmethod
    def _number(session_id: str, prepared: list[_Prepared], existing: dict[str, Step], first_id: int, now: str):
        """Assign step ids from ``first_id``; returns the insert rows and, per input, ``(step_id, data, created)``
        with ``data`` the stored dict for new steps or the stored :class:`Step` for retries."""
        rows: list[dict] = []
        plan: list[tuple[int, Any, bool]] = []
        batch: dict[str, tuple[int, dict]] = {}
        next_id = first_id
        for p in prepared:
            cid = p.step.client_step_id
            if cid is not None and cid in existing:
                plan.append((existing[cid].step_id, existing[cid], False))
                continue
            if cid is not None and cid in batch:  # repeated inside the batch: the first one wins
                sid_, d = batch[cid]
                plan.append((sid_, d, False))
                continue
            d = dict(p.data)
            d["step_id"] = next_id
            d["timestamp"] = p.data["timestamp"] if p.has_ts else now
            rows.append(dict(
                session_id=session_id, step_id=next_id, client_step_id=cid, provenance=p.step.provenance,
                data_json=json.dumps(d, ensure_ascii=False, separators=(",", ":")),
            ))
            if cid is not None:
                batch[cid] = (next_id, d)
            plan.append((next_id, d, True))
            next_id += 1
        return rows, plan

    @staticmethod
    def _result(prepared: list[_Prepared], plan: list[tuple[int, Any, bool]], step_count: int) -> AppendResult:
        out: list[Step] = []
        for p, (step_id, d, _created) in zip(prepared, plan, strict=True):
            if isinstance(d, Step):
                out.append(d)
            else:
                out.append(p.step.model_copy(update={"step_id": step_id, "timestamp": d["timestamp"]}))
        return AppendResult(steps=out, created=[c for _, _, c in plan], step_count=step_count)

    def _append_locked(self, conn: Connection, session_id: str, row, prepared: list[_Prepared]) -> AppendResult:
        """Append inside a transaction that already holds the trajectory's lock (see :meth:`pending`)."""
        cids = [p.step.client_step_id for p in prepared if p.step.client_step_id is not None]
        existing = self._existing(conn, session_id, cids) if cids else {}
        fresh = self._fresh_count(prepared, existing)
        if fresh and row["status"] == "finished":
            raise _finished(session_id)
        rows, plan = self._number(session_id, prepared, existing, row["step_count"] + 1, utcnow())
        if rows:
            conn.execute(insert(steps), rows)
            conn.execute(
                update(trajectories)
                .where(trajectories.c.session_id == session_id)
                .values(step_count=row["step_count"] + fresh)
            )
        return self._result(prepared, plan, row["step_count"] + fresh)

    def log_steps(self, session_id: str, new_steps: Sequence[dict[str, Any]], *, redact: bool = True) -> AppendResult:
        """Append steps atomically (all or none) and report what happened.

        Each item is a partial step (``Step`` fields; ``step_id`` is assigned, ``timestamp`` defaults to
        the commit time). Items whose ``client_step_id`` is already stored (or repeats earlier in the same
        batch) return the stored step with ``created`` false. Raises :class:`StoreError` if the trajectory
        is unknown or finished (unless every item is a retry) or a step's calls and observation do not
        pair up, and ``pydantic.ValidationError`` on malformed fields; nothing is written then.

        SQLite runs the whole append in one ``BEGIN IMMEDIATE`` transaction. On PostgreSQL the row lock is
        held only to number and insert the new steps: retried client step ids are looked up first, then
        ``step_count`` is bumped with ``UPDATE ... RETURNING`` (which locks the trajectory row until
        commit); if a concurrent retry of the same id commits in between, the unique constraint rejects
        the insert and the call starts over (and then finds it).
        """
        prepared, counts = self._prepare(new_steps, redact=redact)
        if self.dialect == "sqlite":  # BEGIN IMMEDIATE already serialises the whole transaction
            with self._tx() as conn:
                res = self._append_locked(conn, session_id, self._row(conn, session_id), prepared)
            res.redactions = counts
            return res
        cids = [p.step.client_step_id for p in prepared if p.step.client_step_id is not None]
        with self.engine.connect() as conn:  # one connection (one pool checkout) for the lookup and the write
            for attempt in range(5):
                existing = self._existing(conn, session_id, cids) if cids else {}
                conn.commit()  # end the lookup's transaction; the write below starts its own
                fresh = self._fresh_count(prepared, existing)
                try:
                    with conn.begin():
                        if fresh == 0:
                            first_id, step_count = 0, self._row(conn, session_id)["step_count"]
                        else:
                            bumped = conn.execute(
                                update(trajectories)
                                .where(trajectories.c.session_id == session_id, trajectories.c.status == "running")
                                .values(step_count=trajectories.c.step_count + fresh)
                                .returning(trajectories.c.step_count)
                            ).first()
                            if bumped is None:
                                self._row(conn, session_id)  # raises for an unknown id
                                raise _finished(session_id)
                            step_count = bumped[0]
                            first_id = step_count - fresh + 1
                        rows, plan = self._number(session_id, prepared, existing, first_id, utcnow())
                        if rows:
                            conn.execute(insert(steps), rows)
                except IntegrityError:
                    if attempt == 4 or not cids:
                        raise
                    continue
                res = self._result(prepared, plan, step_count)
                res.redactions = counts
                return res
        raise AssertionError("unreachable")  # pragma: no cover

    def append_steps(self, session_id: str, new_steps: list[dict[str, Any]]) -> list[Step]:
        """Append steps atomically; returns the stored steps (see :meth:`log_steps`)."""
        return self.log_steps(session_id, new_steps).steps

    @contextmanager
    def pending(self, session_id: str) -> Iterator[PendingTx]:
        """A locked transaction on one trajectory for hook bookkeeping (see :class:`PendingTx`)."""
        with self._tx() as conn:
            row = dict(self._row(conn, session_id, lock=True))
            yield PendingTx(self, conn, session_id, row)

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
        if final_message:
            final_message, _ = self.redactor.text(final_message)
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

    # -- reading ------------------------------------------------------------------------------
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
            origin=row["origin"],
            external_id=row["external_id"],
        )

    def summary(self, session_id: str) -> TrajectorySummary:
        with self._read.connect() as conn:
            return self._summary_from_row(self._row(conn, session_id))

    def get(self, session_id: str) -> Trajectory:
        """The whole trajectory with its steps in order. Raises :class:`StoreError` if unknown."""
        with self._read.connect() as conn:
            row = self._row(conn, session_id)
            datas = conn.execute(
                select(steps.c.data_json).where(steps.c.session_id == session_id).order_by(steps.c.step_id)
            ).scalars()
            step_list = [Step.model_validate_json(d) for d in datas]
        summary = self._summary_from_row(row)
        comps = json.loads(row["reward_components_json"]) if row["reward_components_json"] else {}
        meta = json.loads(row["meta_json"]) if row["meta_json"] else {}
        return Trajectory(**summary.model_dump(), steps=step_list, reward_components=comps, meta=meta)

    def steps_page(self, session_id: str, offset: int, limit: int) -> list[Step]:
        """Steps ``offset .. offset+limit-1`` (0-based) in order, without loading the rest."""
        with self._read.connect() as conn:
            self._row(conn, session_id)
            datas = conn.execute(
                select(steps.c.data_json)
                .where(steps.c.session_id == session_id)
                .order_by(steps.c.step_id)
                .offset(offset)
                .limit(limit)
            ).scalars()
            return [Step.model_validate_json(d) for d in datas]

    def score_json(self, session_id: str) -> dict | None:
        with self._read.connect() as conn:
            row = self._row(conn, session_id)
        return json.loads(row["score_json"]) if row["score_json"] else None

    def _filtered(
        self,
        *,
        task_id: str | None = None,
        behaviour: str | None = None,
        agent_name: str | None = None,
        passed: bool | None = None,
        status: str | None = None,
        outcome: str | None = None,
        split: str | None = None,
        origin: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        min_reward: float | None = None,
    ):
        c = trajectories.c
        q = select(trajectories)
        if task_id is not None:
            q = q.where(c.task_id == task_id)
        if behaviour is not None:
            q = q.where(c.behaviour == behaviour)
        if agent_name is not None:
            q = q.where(c.agent_name == agent_name)
        if passed is not None:
            q = q.where(c.passed == passed)
        if status is not None:
            q = q.where(c.status == status)
        if split is not None:
            q = q.where(c.split == split)
        if origin is not None:
            q = q.where(or_(c.origin == origin, c.origin.like(f"{origin}:%")))
        if outcome is not None:
            if outcome not in OUTCOMES:
                raise StoreError(f"unknown outcome {outcome!r}", f"use one of {', '.join(OUTCOMES)}")
            if outcome == "running":
                q = q.where(c.status == "running")
            elif outcome == "unscored":
                q = q.where(c.status == "finished", c.passed.is_(None))
            else:
                q = q.where(c.passed == (outcome == "passed"))
        if created_after is not None:
            q = q.where(c.created_at >= normalise_time(created_after))
        if created_before is not None:
            q = q.where(c.created_at < normalise_time(created_before))
        if min_reward is not None:
            q = q.where(c.reward >= min_reward)
        return q

    def list(self, *, limit: int = 50, offset: int = 0, **filters: Any) -> tuple[list[TrajectorySummary], int]:
        """Summaries matching the filters, newest first, plus the total count before paging.

        Filters: ``task_id``, ``behaviour``, ``agent_name``, ``passed``, ``status``, ``outcome`` (one of
        :data:`OUTCOMES`), ``split``, ``origin`` (``hook`` matches ``hook:claude-code``),
        ``created_after`` / ``created_before`` (ISO-8601; after is inclusive), ``min_reward``.
        Raises ``ValueError`` for a malformed time and :class:`StoreError` for an unknown outcome.
        """
        q = self._filtered(**filters)
        with self._read.connect() as conn:
            total = conn.execute(select(func.count()).select_from(q.subquery())).scalar_one()
            rows = conn.execute(
                q.order_by(trajectories.c.created_at.desc(), trajectories.c.session_id).limit(limit).offset(offset)
            ).mappings()
            return [self._summary_from_row(r) for r in rows], total

    def iter_summaries(self, *, page: int = 500, **filters: Any) -> Iterator[TrajectorySummary]:
        """Every matching summary, oldest first (stable order for exports), fetched page by page."""
        q = self._filtered(**filters).order_by(trajectories.c.created_at, trajectories.c.session_id)
        offset = 0
        while True:
            with self._read.connect() as conn:
                rows = list(conn.execute(q.limit(page).offset(offset)).mappings())
            for r in rows:
                yield self._summary_from_row(r)
            if len(rows) < page:
                return
            offset += page

    def by_external_id(self, external_id: str) -> list[TrajectorySummary]:
        """Trajectories recorded for one client session id, oldest first."""
        with self._read.connect() as conn:
            rows = conn.execute(
                select(trajectories)
                .where(trajectories.c.external_id == external_id)
                .order_by(trajectories.c.created_at, trajectories.c.session_id)
            ).mappings()
            return [self._summary_from_row(r) for r in rows]

    def exists(self, session_id: str) -> bool:
        with self._read.connect() as conn:
            return conn.execute(
                select(trajectories.c.session_id).where(trajectories.c.session_id == session_id)
            ).first() is not None

    # -- sandboxes ----------------------------------------------------------------------------
    def add_sandbox(self, **row) -> None:
        now = utcnow()
        with self._tx() as conn:
            conn.execute(insert(sandboxes).values(created_at=now, updated_at=now, claims_json="[]", **row))

    def sandbox(self, sandbox_id: str) -> dict:
        """The sandbox row as a dict (``claims`` decoded). Raises :class:`StoreError` if unknown."""
        with self._read.connect() as conn:
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
        with self._read.connect() as conn:
            return [dict(r) for r in conn.execute(q.order_by(sandboxes.c.created_at)).mappings()]

    def close(self) -> None:
        self.engine.dispose()
