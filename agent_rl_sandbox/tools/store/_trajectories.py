"""The trajectories repository: trajectories and their steps (one aggregate).

Steps are append-only and numbered densely per trajectory; a client may pass ``client_step_id`` so a
retried call does not duplicate a step. A finished trajectory is immutable (a correction is a new
trajectory whose ``parent_session_id`` names the old one). Appends take a write lock first (``BEGIN
IMMEDIATE`` on SQLite, ``SELECT ... FOR UPDATE`` of the trajectory row on PostgreSQL) so concurrent
writers never collide on a step number, and each append is one transaction: a writer killed mid-batch
leaves either the whole batch or none of it.

Every step and final message is passed through the secret :class:`~._redact.Redactor` before it is
written, whoever writes it (sandbox tools, ``trajectory_log_step``, the hook command, importers).

Records returned are the wire models of ``schemas.trajectory``: :class:`TrajectorySummary`,
:class:`Trajectory` and :class:`Step`.
"""

from __future__ import annotations

import builtins
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from pydantic_core import PydanticSerializationError
from sqlalchemy import func, insert, or_, select, text, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from agent_rl_sandbox.schemas.trajectory import AgentInfo, Step, Trajectory, TrajectorySummary
from agent_rl_sandbox.tools.errors import WouldWait
from agent_rl_sandbox.tools.store._common import (
    NOT_UNICODE,
    StoreError,
    lone_surrogate_at,
    new_id,
    normalise_time,
    utcnow,
)
from agent_rl_sandbox.tools.store._fast_steps import fast_rest
from agent_rl_sandbox.tools.store._integrity import step_problems
from agent_rl_sandbox.tools.store._schema import steps, trajectories
from agent_rl_sandbox.tools.store._sqlite_direct import DirectSqlite

if TYPE_CHECKING:
    from agent_rl_sandbox.tools.store._redact import Redactor

OUTCOMES = ("passed", "failed", "unscored", "running")
"""Values of the ``outcome`` filter of :meth:`TrajectoryRepository.list`."""


def unknown_trajectory(session_id: str) -> StoreError:
    """The error for a trajectory id the store does not hold, also what an agent gets for another
    owner's id where even its existence must not show (``trajectory_start``'s ``parent_session_id``)."""
    return StoreError(
        f"unknown trajectory {session_id!r}",
        "call trajectory_list to see ids, or sandbox_reset / trajectory_start to begin one",
    )


@dataclass
class _Prepared:
    step: Step
    has_ts: bool
    rest: str
    """The step's stored JSON without its ``step_id`` and ``timestamp`` (:func:`_rest_json`)."""


_NOT_REST: set[str] = {"step_id", "timestamp"}


def _rest_json(step: Step) -> str:
    """``step``'s stored JSON object without ``step_id`` and ``timestamp`` (the first two fields of
    :class:`Step`, which :func:`_stored_json` writes in front): byte for byte
    ``json.dumps(step.model_dump(mode="json", exclude_none=True, exclude=...), ensure_ascii=False,
    separators=(",", ":"))``, from pydantic's JSON writer where it writes the same (:data:`_FLOAT_FORMS`),
    else from that expression itself (also for a value pydantic cannot write; a lone surrogate never gets
    here: :meth:`TrajectoryRepository._prepare` refuses it)."""
    try:
        rest = step.model_dump_json(exclude_none=True, exclude=_NOT_REST)
    except PydanticSerializationError:
        rest = ""
    if not rest or (("e-" in rest or "0.0000" in rest) and _FLOAT_FORMS.search(rest)):
        rest = json.dumps(
            step.model_dump(mode="json", exclude_none=True, exclude=_NOT_REST),
            ensure_ascii=False,
            separators=(",", ":"),
        )
    return rest


def _stored_json(step_id: int, timestamp: str, rest: str) -> str:
    """The ``data_json`` of a step: ``{"step_id":..,"timestamp":..,`` then the fields of ``rest``
    (:func:`_rest_json`), which is ``json.dumps`` of the whole step dumped with those two set."""
    ts = json.dumps(timestamp, ensure_ascii=False)
    return f'{{"step_id":{step_id},"timestamp":{ts}{"," if rest != "{}" else ""}{rest[1:]}'


def _finished(session_id: str) -> StoreError:
    return StoreError(
        f"trajectory {session_id} is finished and immutable",
        "start a new trajectory with parent_session_id set to correct it",
    )


class StepsChanged(StoreError):
    """:meth:`TrajectoryRepository.finish` was told how many steps its score read
    (``steps_scored``) and the trajectory holds another count: a step landed after the score was
    computed (another server process, a hook). Nothing was written; score the stored steps again."""

    def __init__(self, session_id: str, scored: int, stored: int):
        super().__init__(
            f"trajectory {session_id} has {stored} steps but its score read {scored}: a step was recorded while "
            "it was being scored; not finished",
            "score the stored steps again and finish with that score",
        )
        self.scored = scored
        self.stored = stored


@dataclass
class AppendResult:
    """What :meth:`TrajectoryRepository.log_steps` did: the steps in input order (stored ones for retried
    ``client_step_id`` values), which of them this call created, and the secrets redacted."""

    steps: list[Step]
    created: list[bool]
    redactions: Counter[str] = field(default_factory=Counter)
    step_count: int = 0


class StepRejected(StoreError):
    """A step of a bulk import that cannot be stored (:meth:`TrajectoryRepository.import_trajectory`):
    ``index`` is its 0-based position in the batch, ``field`` the dotted path of the offending field in
    the step (``tool_calls[0].arguments``; ``None`` for the step as a whole), ``reason`` the sentence.
    Nothing was written."""

    def __init__(self, index: int, field: str | None, reason: str):
        self.index, self.field, self.reason = index, field, reason
        where = f" at {field}" if field else ""
        super().__init__(f"step {index + 1} is malformed{where}: {reason}", "fix the step; nothing was written")


class TrajectoryExists(StoreError):
    """:meth:`TrajectoryRepository.import_trajectory` found its session id taken (by a concurrent import
    of the same file, which stored the whole trajectory: imports are one transaction each)."""


@dataclass
class BulkResult:
    """What :meth:`TrajectoryRepository.import_trajectory` stored: the number of steps and the secrets
    redacted in them (as :attr:`AppendResult.redactions`; meta and final message are redacted uncounted,
    as :meth:`TrajectoryRepository.start` and :meth:`TrajectoryRepository.finish` do)."""

    steps: int
    redactions: Counter[str]


_FLOAT_FORMS = re.compile(r"[:,\[]-?(?:0\.0000|[0-9][0-9.]*e-)")
"""A number token pydantic's JSON writer may write otherwise than the json module (floats below 1e-4:
``0.00001`` / ``1e-7`` where json writes ``1e-05`` / ``1e-07``); the only difference between the two for
a validated step, so text without it is byte for byte ``json.dumps(step.model_dump(mode="json"))``.
Text inside a string that looks like one only costs the slower exact path."""


def _pairs_up(step: Step) -> bool:
    """Whether a validated step obeys the pairing rules (:func:`step_problems` finds nothing): its call ids
    are distinct and every result's ``source_call_id`` is ``None`` or one of them. The same rules, for the
    types a validated step has, without building findings."""
    calls = step.tool_calls or ()
    ids = {c.tool_call_id for c in calls}
    if len(ids) != len(calls):
        return False
    return step.observation is None or all(
        r.source_call_id is None or r.source_call_id in ids for r in step.observation.results
    )


def _loc(loc: Sequence[Any]) -> str | None:
    """A pydantic error location as a dotted path (``tool_calls[0].arguments``)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None


def _refuse_surrogates(what: str, fields: dict[str, Any]) -> None:
    """Raise :class:`StoreError` naming the first of ``fields`` (a field name to its value) whose text holds
    a lone surrogate (:func:`~._common.lone_surrogate_at`), before anything is written."""
    bad = lone_surrogate_at(fields)
    if bad is not None:
        raise StoreError(
            f"{what}'s {bad} is not stored: {NOT_UNICODE}", "replace the lone surrogate; nothing was written"
        )


_SCREEN_BATCH = 256
"""Steps of a bulk import screened for secrets together (:meth:`TrajectoryRepository._prepare_bulk`)."""
_BULK_ROWS = 5000
"""Step rows per ``executemany`` of a bulk import (bounds one statement's parameter list)."""


class TrajectoryRepository:
    """Trajectories and their steps in one database (see the module docstring).

    All methods are synchronous and safe to call from several threads and processes. Raises
    :class:`StoreError` for unknown ids, writes to finished trajectories and malformed steps.
    """

    def __init__(self, engine: Engine):
        self.engine = engine
        self._read = engine.execution_options(readonly=True)
        self._redactor: Redactor | None = None
        self._direct = DirectSqlite(engine) if engine.dialect.name == "sqlite" else None
        """The plain DB-API connection of the ``nowait`` (event loop) path on SQLite."""

    def close(self) -> None:
        """Close the connection of the ``nowait`` path (the engine's pool is the store's to dispose)."""
        if self._direct is not None:
            self._direct.close()

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    @property
    def redactor(self) -> Redactor:
        """The secret redactor (built on first use: importing detect-secrets costs ~0.1 s)."""
        if self._redactor is None:
            from agent_rl_sandbox.tools.store._redact import Redactor

            self._redactor = Redactor()
        return self._redactor

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    @property
    def _sqlite_returning(self) -> bool:
        """SQLite 3.35+ (``INSERT ... RETURNING``)."""
        version = self.engine.dialect.server_version_info or (0,)
        return self.dialect == "sqlite" and tuple(version) >= (3, 35)

    @property
    def writes_without_waiting(self) -> bool:
        """Whether :meth:`log_steps` can take ``nowait=True`` and still write (SQLite: a ``BEGIN IMMEDIATE``
        that fails at once when the write lock is held). On PostgreSQL every such call raises
        :class:`~agent_rl_sandbox.tools.errors.WouldWait` (each statement is a server round trip)."""
        return self.dialect == "sqlite"

    @contextmanager
    def _tx_nowait(self) -> Iterator[Connection]:
        """A SQLite write transaction that starts only if the write lock is free at once; raises
        :class:`WouldWait` (nothing done) when another connection holds it."""
        with self.engine.connect().execution_options(nowait=True) as conn:
            try:
                trans = conn.begin()
            except OperationalError as e:
                if "locked" in str(e) or "busy" in str(e):
                    raise WouldWait("the SQLite write lock is held by another connection") from None
                raise
            with trans:
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
        owner=None,
        created_at=None,
    ) -> dict:
        texts = {
            "session_id": sid,
            "task_id": task_id,
            "behaviour": behaviour,
            "split": split,
            "sandbox_id": sandbox_id,
            "parent_session_id": parent_session_id,
            "origin": origin,
            "external_id": external_id,
            "owner": owner,
            "created_at": created_at,
            "agent": agent_info.model_dump(),
        }  # meta is stored as ASCII JSON (escapes), so as given
        _refuse_surrogates("the trajectory", texts)
        return dict(
            session_id=sid,
            agent_json=agent_info.model_dump_json(exclude_none=True),
            agent_name=agent_info.name,
            task_id=task_id,
            behaviour=behaviour,
            split=split,
            sandbox_id=sandbox_id,
            status="running",
            created_at=created_at or utcnow(),
            step_count=0,
            parent_session_id=parent_session_id,
            origin=origin,
            external_id=external_id,
            meta_json=json.dumps(meta, sort_keys=True, default=str) if meta else None,
            owner=owner,
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
        owner: str | None = None,
        created_at: str | None = None,
    ) -> TrajectorySummary:
        """Create a running trajectory and return its summary. ``owner`` is the creating caller's owner
        id. ``created_at`` (ISO 8601, any offset; default now) is when the work began: importers pass the
        session's first event, so ``--since/--until`` filter by when the work happened, not when it was
        imported. Raises :class:`StoreError` for an unknown ``parent_session_id``, ``ValueError`` for a
        ``created_at`` that is not ISO 8601, and ``sqlalchemy.exc.IntegrityError`` for a taken
        ``session_id``."""
        agent_info = agent if isinstance(agent, AgentInfo) else AgentInfo(**(agent or {}))
        sid = session_id or new_id("traj")
        if origin is None and sandbox_id is not None:
            origin = "sandbox"
        if meta:
            meta, _ = self.redactor.value(meta)
        row = self._new_row(
            sid,
            agent_info,
            task_id=task_id,
            behaviour=behaviour,
            split=split,
            sandbox_id=sandbox_id,
            parent_session_id=parent_session_id,
            origin=origin,
            external_id=external_id,
            meta=meta,
            owner=owner,
            created_at=normalise_time(created_at) if created_at else None,
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
        reopen: bool = True,
    ) -> tuple[TrajectorySummary, bool]:
        """The running trajectory recorded for a client session (``external_id``), created if there is
        none. A session whose trajectory was already finished (a resumed Claude Code session) gets a new
        trajectory whose ``parent_session_id`` is the previous one; with ``reopen=False`` it does not,
        and the finished one is returned instead (``status == "finished"``: a late event of an ended
        session must not open a trajectory that never ends). Safe under concurrent callers: the
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
            if sid is None and rows and not reopen:
                sid = rows[0][0]
            created = sid is None
            if created:
                parent = rows[0][0] if rows else None
                if meta:
                    meta, _ = self.redactor.value(meta)
                sid = new_id("traj")
                conn.execute(
                    insert(trajectories).values(
                        **self._new_row(
                            sid,
                            agent_info,
                            task_id=task_id,
                            behaviour=behaviour,
                            split=split,
                            sandbox_id=None,
                            parent_session_id=parent,
                            origin=origin,
                            external_id=external_id,
                            meta=meta,
                        )
                    )
                )
        assert sid is not None
        return self.summary(sid), created

    def idle_hook_sessions(self, before: str, *, limit: int = 200) -> builtins.list[tuple[str, str, str]]:
        """Running trajectories recorded by a client hook (origin ``hook:...``) with no activity since
        ``before`` (ISO-8601): neither a step nor a pending hook event newer. Returns
        ``(session_id, origin, external_id)``, at most ``limit``. A client without a session-end event
        (Codex) or one that crashed leaves such trajectories; the hook drainer finishes them."""
        from agent_rl_sandbox.tools.store._schema import hook_pending

        cutoff = normalise_time(before)
        out: builtins.list[tuple[str, str, str]] = []
        with self._read.connect() as conn:
            rows = conn.execute(
                select(trajectories.c.session_id, trajectories.c.origin, trajectories.c.external_id)
                .where(
                    trajectories.c.status == "running",
                    trajectories.c.origin.like("hook:%"),
                    trajectories.c.external_id.is_not(None),
                    trajectories.c.created_at < cutoff,
                )
                .order_by(trajectories.c.created_at)
                .limit(limit)
            ).all()
            for sid, origin, ext in rows:
                last = conn.execute(
                    select(steps.c.data_json).where(steps.c.session_id == sid).order_by(steps.c.step_id.desc()).limit(1)
                ).scalar()
                pending = conn.execute(
                    select(func.max(hook_pending.c.updated_at)).where(hook_pending.c.session_id == sid)
                ).scalar()
                times = [pending] if pending else []
                if last:
                    times.append(json.loads(last).get("timestamp") or "")
                try:
                    latest = max((normalise_time(t) for t in times if t), default="")
                except ValueError:
                    continue  # a time we cannot read: leave the trajectory alone
                if latest < cutoff:
                    out.append((sid, origin, ext))
        return out

    def _row(self, conn: Connection, session_id: str, *, lock: bool = False):
        q = select(trajectories).where(trajectories.c.session_id == session_id)
        if lock and self.dialect == "postgresql":
            q = q.with_for_update()
        row = conn.execute(q).mappings().first()
        if row is None:
            self._unknown(session_id)
        return row

    @staticmethod
    def _unknown(session_id: str) -> NoReturn:
        raise unknown_trajectory(session_id)

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
    def _prepare(
        self, items: Sequence[dict[str, Any]], *, redact: bool, keep_absent_timestamps: bool = False
    ) -> tuple[list[_Prepared], Counter]:
        """Validate, redact and serialise outside any lock. With ``keep_absent_timestamps`` a step without a
        timestamp is stored with ``""`` (the time is unknown) instead of the commit time."""
        counts: Counter[str] = Counter()
        out: list[_Prepared] = []
        for i, item in enumerate(items):
            item = dict(item)
            item.pop("step_id", None)  # the store numbers steps
            bad = lone_surrogate_at(item)
            if bad is not None:  # refused, naming where (pydantic would write U+FFFD for one in a key)
                raise StepRejected(i, bad, NOT_UNICODE)
            has_ts = bool(item.get("timestamp")) or keep_absent_timestamps
            data = {"timestamp": item.get("timestamp") or "", **item, "step_id": 1}
            if redact:  # the screened walk finds what value() finds (tests/tools/trajectories/test_redact_screen.py)
                data, c = self.redactor.value_screened(data)
                if c:
                    counts.update(c)
            step = Step.model_validate(data)
            if not _pairs_up(step):
                raise StoreError(
                    f"step {i} is malformed: {'; '.join(step_problems(step))}",
                    "give each tool call of a step its own tool_call_id and point each observation result "
                    "at one of them (or at none)",
                )
            out.append(_Prepared(step, has_ts, _rest_json(step)))
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
        """Assign step ids from ``first_id``; returns the insert rows and, per input, ``(step_id, stored,
        created)`` with ``stored`` the timestamp written for new steps or the stored :class:`Step` for retries."""
        rows: list[dict] = []
        plan: list[tuple[int, Any, bool]] = []
        batch: dict[str, tuple[int, str]] = {}
        next_id = first_id
        for p in prepared:
            cid = p.step.client_step_id
            if cid is not None and cid in existing:
                plan.append((existing[cid].step_id, existing[cid], False))
                continue
            if cid is not None and cid in batch:  # repeated inside the batch: the first one wins
                sid_, ts = batch[cid]
                plan.append((sid_, ts, False))
                continue
            ts = p.step.timestamp if p.has_ts else now
            rows.append(
                dict(
                    session_id=session_id,
                    step_id=next_id,
                    client_step_id=cid,
                    provenance=p.step.provenance,
                    data_json=_stored_json(next_id, ts, p.rest),
                )
            )
            if cid is not None:
                batch[cid] = (next_id, ts)
            plan.append((next_id, ts, True))
            next_id += 1
        return rows, plan

    @staticmethod
    def _result(prepared: list[_Prepared], plan: list[tuple[int, Any, bool]], step_count: int) -> AppendResult:
        out: list[Step] = []
        for p, (step_id, stored, _created) in zip(prepared, plan, strict=True):
            if isinstance(stored, Step):
                out.append(stored)
            else:
                out.append(p.step.model_copy(update={"step_id": step_id, "timestamp": stored}))
        return AppendResult(steps=out, created=[c for _, _, c in plan], step_count=step_count)

    def _append_locked(
        self, conn: Connection, session_id: str, status: str, step_count: int, prepared: list[_Prepared]
    ) -> AppendResult:
        """Append inside a transaction that already holds the trajectory's lock (``status`` and
        ``step_count`` as read under that lock; see :meth:`HookEventRepository.transaction`)."""
        cids = [p.step.client_step_id for p in prepared if p.step.client_step_id is not None]
        if len(prepared) == 1 and cids and status != "finished" and self._sqlite_returning:
            # One step with a client id (the common MCP call): the retry check folds into the insert
            # (ON CONFLICT on uq_steps_session_client_step); only a retry then reads the stored step.
            rows, plan = self._number(session_id, prepared, {}, step_count + 1, utcnow())
            stmt = (
                sqlite_insert(steps)
                .values(rows[0])
                .on_conflict_do_nothing(index_elements=["session_id", "client_step_id"])
                .returning(steps.c.step_id)
            )
            if conn.execute(stmt).first() is not None:
                conn.execute(
                    update(trajectories)
                    .where(trajectories.c.session_id == session_id)
                    .values(step_count=step_count + 1)
                )
                return self._result(prepared, plan, step_count + 1)
        existing = self._existing(conn, session_id, cids) if cids else {}
        fresh = self._fresh_count(prepared, existing)
        if fresh and status == "finished":
            raise _finished(session_id)
        rows, plan = self._number(session_id, prepared, existing, step_count + 1, utcnow())
        if rows:
            conn.execute(insert(steps), rows)
            conn.execute(
                update(trajectories)
                .where(trajectories.c.session_id == session_id)
                .values(step_count=step_count + fresh)
            )
        return self._result(prepared, plan, step_count + fresh)

    def log_steps(
        self,
        session_id: str,
        new_steps: Sequence[dict[str, Any]],
        *,
        redact: bool = True,
        keep_absent_timestamps: bool = False,
        nowait: bool = False,
        owner_check: Callable[[str | None], None] | None = None,
    ) -> AppendResult:
        """Append steps atomically (all or none) and report what happened.

        Each item is a partial step (``Step`` fields; ``step_id`` is assigned, ``timestamp`` defaults to
        the commit time, or stays ``""`` (unknown) with ``keep_absent_timestamps``, as importers ask: a file
        that recorded no time must not gain the import time, which would make a time budget pass). Items whose ``client_step_id`` is already stored (or repeats earlier in the same
        batch) return the stored step with ``created`` false. Raises :class:`StoreError` if the trajectory
        is unknown or finished (unless every item is a retry) or a step's calls and observation do not
        pair up, and ``pydantic.ValidationError`` on malformed fields; nothing is written then.

        SQLite runs the whole append in one ``BEGIN IMMEDIATE`` transaction. On PostgreSQL the row lock is
        held only to number and insert the new steps: retried client step ids are looked up first, then
        ``step_count`` is bumped with ``UPDATE ... RETURNING`` (which locks the trajectory row until
        commit); if a concurrent retry of the same id commits in between, the unique constraint rejects
        the insert and the call starts over (and then finds it).

        With ``nowait`` (for a caller on an event loop) the call raises
        :class:`~agent_rl_sandbox.tools.errors.WouldWait`, having written nothing, instead of waiting
        for SQLite's write lock, and always on PostgreSQL (see :attr:`writes_without_waiting`).

        ``owner_check`` (the caller's right to write, e.g. :func:`~agent_rl_sandbox.tools._caller.ensure_owner`)
        gets the trajectory's stored owner before anything is written and raises to refuse; its refusal,
        like the unknown-trajectory error, comes before any error of the steps. On SQLite the owner is
        read with the status and step count inside the write transaction (no read of its own); on
        PostgreSQL by :meth:`owner` first.
        """
        if nowait and not self.writes_without_waiting:
            raise WouldWait("PostgreSQL writes may wait")
        if owner_check is not None and self.dialect != "sqlite":
            owner_check(self.owner(session_id))
        try:
            prepared, counts = self._prepare(new_steps, redact=redact, keep_absent_timestamps=keep_absent_timestamps)
        except Exception:
            if owner_check is not None and self.dialect == "sqlite":  # the refusal (or unknown id) first
                owner_check(self.owner(session_id, nowait=nowait))
            raise
        if nowait and self._direct is not None:  # the event loop's try: plain DB-API, the same statements
            res = self._direct.append(self, session_id, prepared, _finished, owner_check)
            res.redactions = counts
            return res
        if self.dialect == "sqlite":  # BEGIN IMMEDIATE already serialises the whole transaction
            with self._tx_nowait() if nowait else self._tx() as conn:
                row = self._row(conn, session_id)
                if owner_check is not None:
                    owner_check(row["owner"])
                res = self._append_locked(conn, session_id, row["status"], row["step_count"], prepared)
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

    # -- bulk import --------------------------------------------------------------------------
    def _prepare_bulk(self, items: Sequence[dict[str, Any]], *, redact: bool) -> tuple[list[tuple], Counter[str]]:
        """Validate, redact and serialise every step once, before anything is written: per step
        ``(client_step_id, provenance, timestamp JSON, the rest of the step's JSON)``. The stored text is
        what :meth:`log_steps` writes for the same step (``keep_absent_timestamps``), byte for byte.
        Raises :class:`StepRejected` for the first step that cannot be stored.

        Steps whose text :func:`~._fast_steps.fast_rest` proves (the common case) skip pydantic; those of
        :data:`_SCREEN_BATCH` steps are screened for secrets at once (:meth:`~._redact.Redactor.clean` of
        the strings the redactor would scan); a batch the screen does not clear, and every step
        ``fast_rest`` cannot prove, take the pydantic way (:meth:`~._redact.Redactor.values_screened`,
        then ``Step.model_validate``), which gives the same text or the error."""
        counts: Counter[str] = Counter()
        out: list[tuple] = []
        stamps: dict[str, str] = {}
        for start in range(0, len(items), _SCREEN_BATCH):
            chunk = items[start : start + _SCREEN_BATCH]
            rests: list[str | None] = []
            strings: list[str] = []
            for item in chunk:
                mark = len(strings)
                rest = fast_rest(item, strings)
                if rest is None:
                    del strings[mark:]
                rests.append(rest)
            if redact and strings and not self.redactor.clean("\n".join(strings)):
                rests = [None] * len(chunk)  # a secret may be there: the exact way for all of them
            slow = [j for j, r in enumerate(rests) if r is None]
            done: dict[int, tuple] = {}
            if slow:
                datas = [{"timestamp": chunk[j].get("timestamp") or "", **chunk[j], "step_id": 1} for j in slow]
                if redact:
                    redacted = self.redactor.values_screened(datas)
                    datas = [d for d, _ in redacted]
                    for _, c in redacted:
                        if c:
                            counts.update(c)
                for j, data in zip(slow, datas, strict=True):
                    done[j] = self._prepare_one(start + j, data, stamps)
            for j, (item, rest) in enumerate(zip(chunk, rests, strict=True)):
                if rest is None:
                    out.append(done[j])
                elif ("e-" in rest or "0.0000" in rest) and _FLOAT_FORMS.search(rest):  # json's float text
                    data = {"timestamp": item.get("timestamp") or "", **item, "step_id": 1}
                    out.append(self._prepare_one(start + j, data, stamps))
                else:
                    stamp = item.get("timestamp") or ""
                    ts = stamps.get(stamp)
                    if ts is None:  # steps share few distinct times
                        if lone_surrogate_at(stamp) is not None:  # not in the text fast_rest proved
                            raise StepRejected(start + j, "timestamp", NOT_UNICODE)
                        ts = stamps[stamp] = json.dumps(stamp, ensure_ascii=False)
                    out.append((item.get("client_step_id"), item.get("provenance", "server"), ts, rest))
        return out, counts

    @staticmethod
    def _prepare_one(i: int, data: dict[str, Any], stamps: dict[str, str]) -> tuple:
        """One step the pydantic way (``data`` already redacted): :meth:`_prepare_bulk`'s tuple, or
        :class:`StepRejected` naming step ``i``."""
        from pydantic import ValidationError
        from pydantic_core import PydanticSerializationError

        exclude = {"step_id", "timestamp"}
        bad = lone_surrogate_at(data)
        if bad is not None:  # refused, naming where (pydantic would write U+FFFD for one in a key)
            raise StepRejected(i, bad, NOT_UNICODE)
        try:
            step = Step.model_validate(data)
        except ValidationError as e:
            err = e.errors(include_url=False, include_input=False)[0]
            raise StepRejected(i, _loc(err["loc"]), err["msg"]) from None
        if not _pairs_up(step):
            raise StepRejected(i, None, "; ".join(step_problems(step)))
        try:
            rest = step.model_dump_json(exclude_none=True, exclude=exclude)
        except PydanticSerializationError as e:  # a value pydantic cannot write as JSON
            raise StepRejected(i, None, f"not a JSON value: {e}") from None
        if ("e-" in rest or "0.0000" in rest) and _FLOAT_FORMS.search(rest):
            rest = json.dumps(
                step.model_dump(mode="json", exclude_none=True, exclude=exclude),
                ensure_ascii=False,
                separators=(",", ":"),
            )
        ts = stamps.get(step.timestamp)
        if ts is None:  # steps share few distinct times
            ts = stamps[step.timestamp] = json.dumps(step.timestamp, ensure_ascii=False)
        return (step.client_step_id, step.provenance, ts, rest)

    def import_trajectory(
        self,
        *,
        session_id: str,
        steps_in: Sequence[dict[str, Any]],
        agent: AgentInfo | dict | None = None,
        task_id: str | None = None,
        behaviour: str | None = None,
        split: str | None = None,
        origin: str | None = None,
        external_id: str | None = None,
        meta: dict | None = None,
        parent_session_id: str | None = None,
        created_at: str | None = None,
        final_message: str | None = None,
        finished_at: str | None = None,
        redact: bool = True,
    ) -> BulkResult:
        """Store a whole finished trajectory in one transaction: what :meth:`start`, :meth:`log_steps`
        (``keep_absent_timestamps``) and :meth:`finish` store for the same arguments, written at once.

        Every step is validated, redacted and serialised first (once each; redaction through
        :meth:`~._redact.Redactor.values_screened`), so a bad step raises :class:`StepRejected` having
        written nothing; then the trajectory row (already finished) and all steps (one ``executemany``)
        commit together: a crash leaves the whole trajectory or none of it. Steps are numbered 1..n in
        order; a ``client_step_id`` repeated in ``steps_in`` raises :class:`StepRejected`. Raises
        :class:`StoreError` for an unknown ``parent_session_id``, :class:`TrajectoryExists` for a taken
        ``session_id`` (a concurrent import of the same file) and ``ValueError`` for a time that is not
        ISO 8601."""
        prepared, counts = self._prepare_bulk(steps_in, redact=redact)
        _refuse_surrogates("the trajectory", {"final_message": final_message, "finished_at": finished_at})
        cids = [p[0] for p in prepared if p[0] is not None]
        if len(set(cids)) != len(cids):  # name the first repeat
            seen: set[str] = set()
            for i, (cid, *_rest) in enumerate(prepared):
                if cid is not None:
                    if cid in seen:
                        raise StepRejected(i, "client_step_id", f"{cid!r} repeats an earlier step of the batch")
                    seen.add(cid)
        agent_info = agent if isinstance(agent, AgentInfo) else AgentInfo(**(agent or {}))
        if meta and redact:  # as start() and finish() do (their counts are not reported either)
            meta, _ = self.redactor.value(meta)
        if final_message and redact:
            final_message, _ = self.redactor.text(final_message)
        row = self._new_row(
            session_id,
            agent_info,
            task_id=task_id,
            behaviour=behaviour,
            split=split,
            sandbox_id=None,
            parent_session_id=parent_session_id,
            origin=origin,
            external_id=external_id,
            meta=meta,
            created_at=normalise_time(created_at) if created_at else None,
        )
        row.update(
            status="finished",
            step_count=len(prepared),
            finished_at=normalise_time(finished_at) if finished_at else utcnow(),
            final_message=final_message,
            reward=None,
            passed=None,
            self_report_only=None,
            reward_components_json=json.dumps({}, sort_keys=True),
            score_json=None,
        )
        rows = [
            (session_id, n, cid, prov, f'{{"step_id":{n},"timestamp":{ts}{"," if rest != "{}" else ""}{rest[1:]}')
            for n, (cid, prov, ts, rest) in enumerate(prepared, 1)
        ]
        mark = "?" if self.dialect == "sqlite" else "%s"  # the DB-API's own parameter style (sqlite3, psycopg)
        sql = (
            f"INSERT INTO {steps.name} (session_id, step_id, client_step_id, provenance, data_json) "
            f"VALUES ({', '.join([mark] * 5)})"
        )
        try:
            with self._tx() as conn:
                if parent_session_id is not None:
                    self._row(conn, parent_session_id)
                conn.execute(insert(trajectories).values(**row))
                for i in range(0, len(rows), _BULK_ROWS):  # plain executemany: no per-row compiled parameters
                    conn.exec_driver_sql(sql, rows[i : i + _BULK_ROWS])
        except IntegrityError:
            if self.exists(session_id):
                raise TrajectoryExists(f"trajectory {session_id} is already stored", "nothing to do") from None
            raise
        return BulkResult(steps=len(rows), redactions=counts)

    def append_steps(self, session_id: str, new_steps: list[dict[str, Any]]) -> list[Step]:
        """Append steps atomically; returns the stored steps (see :meth:`log_steps`)."""
        return self.log_steps(session_id, new_steps).steps

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
        finished_at: str | None = None,
        steps_scored: int | None = None,
    ) -> TrajectorySummary:
        """Close a trajectory (immutable afterwards: :meth:`log_steps` refuses new steps) and store its
        final message and score. ``finished_at`` (ISO 8601; default now) is when the work ended:
        importers pass the session's last event. ``steps_scored``: how many steps the score was computed
        from; checked against the stored count inside the closing transaction (SQLite's write lock, the
        row lock on PostgreSQL), so a score never stands for a trajectory that gained a step after it was
        computed. Raises :class:`StepsChanged` then, :class:`StoreError` for an unknown or finished
        trajectory; nothing is written on either."""
        _refuse_surrogates("the trajectory", {"final_message": final_message, "finished_at": finished_at})
        if final_message:
            final_message, _ = self.redactor.text(final_message)
        with self._tx() as conn:
            row = self._row(conn, session_id, lock=True)
            if row["status"] == "finished":
                raise StoreError(f"trajectory {session_id} is already finished", "trajectory_get shows its result")
            if steps_scored is not None and row["step_count"] != steps_scored:
                raise StepsChanged(session_id, steps_scored, row["step_count"])
            conn.execute(
                update(trajectories)
                .where(trajectories.c.session_id == session_id)
                .values(
                    status="finished",
                    finished_at=normalise_time(finished_at) if finished_at else utcnow(),
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

    def owner(self, session_id: str, *, nowait: bool = False) -> str | None:
        """The stored owner id of one trajectory (``None``: no owner), in one narrow read. Raises
        :class:`StoreError` if the trajectory is unknown (the same error as :meth:`summary`). With
        ``nowait`` on SQLite it reads through the ``nowait`` path's connection (raising
        :class:`~agent_rl_sandbox.tools.errors.WouldWait` when another thread is using it)."""
        if nowait and self._direct is not None:
            known, owner = self._direct.owner(session_id)
            if not known:
                self._unknown(session_id)
            return owner
        with self._read.connect() as conn:
            row = conn.execute(select(trajectories.c.owner).where(trajectories.c.session_id == session_id)).first()
        if row is None:
            self._unknown(session_id)
        return row[0]

    def owners(self, session_ids: Sequence[str]) -> dict[str, str | None]:
        """The stored owner id of each known trajectory in ``session_ids`` (``None``: no owner)."""
        if not session_ids:
            return {}
        with self._read.connect() as conn:
            rows = conn.execute(
                select(trajectories.c.session_id, trajectories.c.owner).where(
                    trajectories.c.session_id.in_(builtins.list(session_ids))
                )
            ).all()
        return {sid: owner for sid, owner in rows}

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
        visible_to: str | None = None,
    ):
        c = trajectories.c
        q = select(trajectories)
        if visible_to is not None:  # an agent: its own rows, and nobody else's held-out ones
            q = q.where(or_(c.owner == visible_to, c.split.is_(None), c.split != "heldout"))
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
        ``created_after`` / ``created_before`` (ISO-8601; after is inclusive), ``min_reward``,
        ``visible_to`` (an agent's owner id: its own rows plus other owners' rows that are not held out).
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

    def by_external_id(self, external_id: str) -> builtins.list[TrajectorySummary]:
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
            return (
                conn.execute(select(trajectories.c.session_id).where(trajectories.c.session_id == session_id)).first()
                is not None
            )
