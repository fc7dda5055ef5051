"""The jobs repository: job rows, their append-only event log, and the worker's claims and leases.

Every state change is :meth:`JobRepository.transition`: ONE conditional ``UPDATE jobs SET state = :to
... WHERE job_id = :id AND state = :from`` and, in the same transaction, one ``job_events`` row (time,
actor, who, from, to, reason). When the ``UPDATE`` matches no row (another caller moved the job first)
nothing is written and :class:`TransitionRefused` is raised, so two racing approvals produce one
approved job and one refusal. The state machine (:data:`~._states.TRANSITIONS`) is checked before the
database is touched: an actor may only take the transitions listed for it.

Workers (see :meth:`JobRepository.claim`):

- SQLite (one machine): one worker at a time. The ``job_worker_lock`` row names the holder and a lease
  expiry; a claim takes or renews it, and a second worker gets nothing while a live lease is held by
  someone else. Every write is ``BEGIN IMMEDIATE``, so a claim is serialised anyway.
- PostgreSQL (many workers, many machines): ``SELECT ... WHERE state = 'queued' ORDER BY created_at
  FOR UPDATE SKIP LOCKED LIMIT 1``, then the conditional ``UPDATE`` to ``running`` in the same
  transaction: concurrent workers never claim one job twice.

A claimed job carries ``worker_id`` and ``lease_expires_at``; the worker renews the lease with
:meth:`JobRepository.heartbeat`. :meth:`JobRepository.recover_lost` fails every ``running``,
``succeeded`` or ``evaluating`` job whose lease has expired with reason ``worker_lost`` (actor ``system``), so nothing
stays ``running`` forever and a restarted worker never runs a job twice (claims take only ``queued``
jobs). At claim time the stored spec is hashed again: a job whose canonical spec no longer matches the
hash a human approved goes to ``failed`` with reason ``spec_changed`` instead of ``running``.

Times are the store's UTC ISO-8601 strings (:func:`~agent_rl_sandbox.tools.store.utcnow`).
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection, Engine

from agent_rl_sandbox.schemas.jobs import FINAL_STATES
from agent_rl_sandbox.tools.jobs._hash import spec_hash
from agent_rl_sandbox.tools.jobs._states import Actor, allowed
from agent_rl_sandbox.tools.store import StoreError, new_id, utcnow
from agent_rl_sandbox.tools.store._schema import job_events, job_worker_lock, jobs

SQLITE_LOCK_NAME = "worker"
"""The name of the single lock row SQLite workers share."""

ACTIVE_STATES: frozenset[str] = frozenset({"running", "evaluating"})
"""States in which a worker holds the job's lease (and may renew it with a heartbeat)."""

LEASED_STATES: frozenset[str] = ACTIVE_STATES | {"succeeded"}
"""States a job may hold a lease in: the active ones plus ``succeeded``, which a worker passes
through between ``running`` and ``evaluating`` (its lease carries over). A worker killed there, or
during ``evaluating``, leaves an expiring lease that :meth:`JobRepository.recover_lost` picks up."""

_SETTABLE = frozenset(
    {
        "approved_hash", "decided_by", "decided_at", "decision_note", "worker_id", "lease_expires_at",
        "started_at", "finished_at", "stage", "progress", "workspace",
    }
)  # fmt: skip


class TransitionRefused(StoreError):
    """A transition that the state machine forbids for this actor, or whose expected ``from`` state no
    longer holds (another caller moved the job first). ``state`` is the job's state when refused."""

    def __init__(self, message: str, hint: str = "", state: str | None = None):
        super().__init__(message, hint)
        self.state = state


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One row of a job's append-only event log."""

    at: str
    actor: str
    """``agent``, ``human``, ``worker`` or ``system``."""
    who: str
    """The identity behind the actor (the MCP caller, the OS user, the worker id, ``system``)."""
    from_state: str | None
    """``None`` for the job's creation."""
    to_state: str
    reason: str


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One stored job."""

    job_id: str
    state: str
    requester: str
    """Who asked (the MCP caller's identity)."""
    trainer: str
    behaviour: str
    """The behaviour whose held-out suite gates this job."""
    spec: dict[str, Any]
    """The canonical spec (see :func:`~._hash.canonical_spec`)."""
    spec_hash: str
    """SHA-256 of the canonical spec at request time."""
    validation: dict[str, Any] | None
    """The dataset validation summary stored at request time (``None`` for a store selection)."""
    approved_hash: str | None
    """The hash a human approved (``None`` until approved)."""
    decided_by: str | None
    decided_at: str | None
    decision_note: str | None
    reason: str | None
    """The reason of the latest transition."""
    created_at: str
    updated_at: str
    expires_at: str
    """When an unapproved request becomes ``expired``."""
    worker_id: str | None
    lease_expires_at: str | None
    started_at: str | None
    finished_at: str | None
    stage: str | None
    progress: float | None
    """0..1 within the current stage, as reported by the worker."""
    metrics: dict[str, Any] | None
    """The last metrics the worker reported."""
    workspace: str | None

    @property
    def final(self) -> bool:
        """No transition leaves this job's state."""
        return self.state in FINAL_STATES


def _record(row: Any) -> JobRecord:
    return JobRecord(
        job_id=row["job_id"],
        state=row["state"],
        requester=row["requester"],
        trainer=row["trainer"],
        behaviour=row["behaviour"],
        spec=json.loads(row["spec_json"]),
        spec_hash=row["spec_hash"],
        validation=json.loads(row["validation_json"]) if row["validation_json"] else None,
        approved_hash=row["approved_hash"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        decision_note=row["decision_note"],
        reason=row["reason"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        expires_at=row["expires_at"],
        worker_id=row["worker_id"],
        lease_expires_at=row["lease_expires_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        stage=row["stage"],
        progress=row["progress"],
        metrics=json.loads(row["metrics_json"]) if row["metrics_json"] else None,
        workspace=row["workspace"],
    )


def later(seconds: float, now: str | None = None) -> str:
    """The store-format time ``seconds`` after ``now`` (default: the current time)."""
    base = datetime.now(UTC) if now is None else datetime.strptime(now, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return (base + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _unknown(job_id: str) -> StoreError:
    return StoreError(f"unknown job {job_id!r}", "call training_list (or `agent-rl-sandbox jobs list`) for job ids")


class JobRepository:
    """Job rows and events on a store's engine. Thread- and process-safe: every write is one
    transaction; concurrent writers are serialised by conditional updates (and SQLite's write lock)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._read = engine.execution_options(readonly=True)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    # -- rows ---------------------------------------------------------------------------------------

    def add(
        self,
        *,
        requester: str,
        spec: dict[str, Any],
        spec_hash: str,
        expires_at: str,
        trainer: str,
        behaviour: str,
        validation: dict[str, Any] | None = None,
        actor: Actor = "agent",
        reason: str = "requested",
        job_id: str | None = None,
    ) -> JobRecord:
        """Store a new job in ``awaiting_approval`` with its creation event (``from_state`` ``None``).
        ``spec`` is the canonical spec and ``spec_hash`` its hash. Returns the stored record. Raises
        ``sqlalchemy.exc.IntegrityError`` for a taken ``job_id``."""
        now = utcnow()
        jid = job_id or new_id("job")
        with self.engine.begin() as conn:
            conn.execute(
                insert(jobs).values(
                    job_id=jid,
                    state="awaiting_approval",
                    requester=requester,
                    trainer=trainer,
                    behaviour=behaviour,
                    spec_json=json.dumps(spec, sort_keys=True),
                    spec_hash=spec_hash,
                    validation_json=json.dumps(validation) if validation is not None else None,
                    reason=reason,
                    created_at=now,
                    updated_at=now,
                    expires_at=expires_at,
                )  # fmt: skip
            )
            self._event(conn, jid, now, actor, requester, None, "awaiting_approval", reason)
        return self.get(jid)

    def get(self, job_id: str) -> JobRecord:
        """The stored job. Raises :class:`StoreError` if unknown."""
        with self._read.connect() as conn:
            row = conn.execute(select(jobs).where(jobs.c.job_id == job_id)).mappings().first()
        if row is None:
            raise _unknown(job_id)
        return _record(row)

    def list(
        self,
        *,
        states: Iterable[str] | None = None,
        requester: str | None = None,
        behaviour: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[builtins.list[JobRecord], int]:
        """Jobs matching every given filter, newest first, as ``(page, total matching)``."""
        conds: builtins.list[Any] = []
        if states is not None:
            conds.append(jobs.c.state.in_(builtins.list(states)))
        if requester is not None:
            conds.append(jobs.c.requester == requester)
        if behaviour is not None:
            conds.append(jobs.c.behaviour == behaviour)
        q = select(jobs).where(*conds).order_by(jobs.c.created_at.desc(), jobs.c.job_id)
        with self._read.connect() as conn:
            total = conn.execute(select(func.count()).select_from(jobs).where(*conds)).scalar_one()
            rows = conn.execute(q.limit(max(0, limit)).offset(max(0, offset))).mappings().all()
        return [_record(r) for r in rows], int(total)

    def events(self, job_id: str) -> builtins.list[JobEvent]:
        """The job's events, oldest first (empty for an unknown id)."""
        q = select(job_events).where(job_events.c.job_id == job_id).order_by(job_events.c.id)
        with self._read.connect() as conn:
            return [
                JobEvent(r["at"], r["actor"], r["who"], r["from_state"], r["to_state"], r["reason"])
                for r in conn.execute(q).mappings()
            ]

    # -- transitions --------------------------------------------------------------------------------

    @staticmethod
    def _event(conn: Connection, job_id: str, at: str, actor: str, who: str, src: str | None, dst: str, reason: str):
        conn.execute(
            insert(job_events).values(
                job_id=job_id, at=at, actor=actor, who=who, from_state=src, to_state=dst, reason=reason
            )
        )

    def _transition(
        self,
        conn: Connection,
        job_id: str,
        src: str,
        dst: str,
        actor: Actor,
        who: str,
        reason: str,
        now: str,
        values: dict[str, Any],
        extra_where: Iterable[Any] = (),
    ) -> bool:
        res = conn.execute(
            update(jobs)
            .where(jobs.c.job_id == job_id, jobs.c.state == src, *extra_where)
            .values(state=dst, reason=reason, updated_at=now, **values)
        )
        if res.rowcount != 1:
            return False
        self._event(conn, job_id, now, actor, who, src, dst, reason)
        return True

    def transition(
        self,
        job_id: str,
        to: str,
        actor: Actor,
        reason: str,
        *,
        expect_from: str,
        who: str | None = None,
        **values: Any,
    ) -> JobRecord:
        """Move ``job_id`` from ``expect_from`` to ``to`` and append the event, atomically.

        ``who`` names the identity behind ``actor`` (default: the actor's name). ``values`` sets
        columns in the same update (any of ``approved_hash``, ``decided_by``, ``decided_at``,
        ``decision_note``, ``worker_id``, ``lease_expires_at``, ``started_at``, ``finished_at``,
        ``stage``, ``progress``, ``workspace``; ``metrics`` as a dict). Entering a final state sets
        ``finished_at`` and clears the lease unless given. Returns the updated record. Raises
        :class:`TransitionRefused` when ``actor`` may not take ``expect_from -> to`` or the job is no
        longer in ``expect_from``, :class:`StoreError` for an unknown job, ``ValueError`` for an
        unknown column name."""
        if not allowed(expect_from, to, actor):
            raise TransitionRefused(
                f"a{'n' if actor[0] in 'aeiou' else ''} {actor} may not move a job from {expect_from} to {to}",
                _hint(actor, expect_from),
                state=expect_from,
            )
        values = self._values(values, to)
        now = utcnow()
        with self.engine.begin() as conn:
            if self._transition(conn, job_id, expect_from, to, actor, who or actor, reason, now, values):
                return self._get(conn, job_id)
            current = conn.execute(select(jobs.c.state).where(jobs.c.job_id == job_id)).scalar()
        if current is None:
            raise _unknown(job_id)
        raise TransitionRefused(
            f"job {job_id} is {current}, not {expect_from}; nothing changed",
            "call training_status (or `agent-rl-sandbox jobs show`) to see its state and events",
            state=current,
        )

    @staticmethod
    def _values(values: dict[str, Any], to: str) -> dict[str, Any]:
        values = dict(values)
        if "metrics" in values:
            m = values.pop("metrics")
            values["metrics_json"] = json.dumps(m) if m is not None else None
        bad = set(values) - _SETTABLE - {"metrics_json"}
        if bad:
            raise ValueError(f"unknown job field(s) {sorted(bad)}; settable: {', '.join(sorted(_SETTABLE))}, metrics")
        if to in FINAL_STATES:
            values.setdefault("finished_at", utcnow())
            values.setdefault("lease_expires_at", None)
        return values

    def _get(self, conn: Connection, job_id: str) -> JobRecord:
        return _record(conn.execute(select(jobs).where(jobs.c.job_id == job_id)).mappings().one())

    def expire_due(self, now: str | None = None) -> builtins.list[str]:
        """Move every ``awaiting_approval`` job whose ``expires_at`` has passed to ``expired``
        (actor ``system``). Returns their ids. Safe to run from many processes at once."""
        now = now or utcnow()
        with self._read.connect() as conn:
            due = conn.execute(
                select(jobs.c.job_id).where(jobs.c.state == "awaiting_approval", jobs.c.expires_at <= now)
            ).scalars().all()  # fmt: skip
        done = []
        for jid in due:
            with self.engine.begin() as conn:
                if self._transition(
                    conn, jid, "awaiting_approval", "expired", "system", "system",
                    "not approved before its expiry", utcnow(),
                    {"finished_at": utcnow()}, [jobs.c.expires_at <= now],
                ):  # fmt: skip
                    done.append(jid)
        return done

    # -- workers ------------------------------------------------------------------------------------

    def _take_sqlite_lock(self, conn: Connection, worker_id: str, lease_s: float, now: str) -> bool:
        row = conn.execute(select(job_worker_lock).where(job_worker_lock.c.name == SQLITE_LOCK_NAME)).mappings().first()
        until = later(lease_s, now)
        if row is None:
            conn.execute(insert(job_worker_lock).values(name=SQLITE_LOCK_NAME, holder=worker_id, expires_at=until))
            return True
        if row["holder"] != worker_id and row["expires_at"] > now:
            return False
        conn.execute(
            update(job_worker_lock)
            .where(job_worker_lock.c.name == SQLITE_LOCK_NAME)
            .values(holder=worker_id, expires_at=until)
        )
        return True

    def worker_lock(self) -> tuple[str, str] | None:
        """SQLite's worker lock as ``(holder, expires_at)``, or ``None`` when never taken."""
        with self._read.connect() as conn:
            row = conn.execute(select(job_worker_lock).where(job_worker_lock.c.name == SQLITE_LOCK_NAME)).first()
        return (row.holder, row.expires_at) if row is not None else None

    def acquire_worker_lock(self, worker_id: str, lease_s: float) -> bool:
        """SQLite: take or renew the single-worker lock for ``lease_s`` seconds; ``False`` while another
        worker's lease is live. PostgreSQL: always ``True`` (many workers may run)."""
        if self.dialect != "sqlite":
            return True
        with self.engine.begin() as conn:
            return self._take_sqlite_lock(conn, worker_id, lease_s, utcnow())

    def release_worker_lock(self, worker_id: str) -> None:
        """SQLite: give the single-worker lock up if ``worker_id`` holds it (a clean exit); no-op otherwise."""
        if self.dialect != "sqlite":
            return
        with self.engine.begin() as conn:
            conn.execute(
                update(job_worker_lock)
                .where(job_worker_lock.c.name == SQLITE_LOCK_NAME, job_worker_lock.c.holder == worker_id)
                .values(expires_at=utcnow())
            )

    def claim(self, worker_id: str, lease_s: float) -> JobRecord | None:
        """Claim the oldest ``queued`` job for ``worker_id``: it becomes ``running`` with a lease of
        ``lease_s`` seconds (renew it with :meth:`heartbeat`). Returns ``None`` when nothing is queued
        or, on SQLite, while another worker holds the lock row. A queued job whose stored spec no longer
        hashes to its approved hash goes to ``failed`` (reason ``spec_changed``) and the next one is
        tried. See the module docstring for the per-database mechanism."""
        while True:
            now = utcnow()
            with self.engine.begin() as conn:
                if self.dialect == "sqlite" and not self._take_sqlite_lock(conn, worker_id, lease_s, now):
                    return None
                q = select(jobs).where(jobs.c.state == "queued").order_by(jobs.c.created_at, jobs.c.job_id).limit(1)
                if self.dialect == "postgresql":
                    q = q.with_for_update(skip_locked=True)
                row = conn.execute(q).mappings().first()
                if row is None:
                    return None
                job = _record(row)
                if (
                    job.approved_hash is None
                    or spec_hash(job.spec) != job.approved_hash
                    or job.spec_hash != job.approved_hash
                ):
                    self._transition(
                        conn, job.job_id, "queued", "failed", "worker", worker_id,
                        "spec_changed: the stored spec no longer matches the hash a human approved", now,
                        {"finished_at": now, "lease_expires_at": None},
                    )  # fmt: skip
                    continue
                if self._transition(
                    conn, job.job_id, "queued", "running", "worker", worker_id, "claimed by a worker", now,
                    {"worker_id": worker_id, "lease_expires_at": later(lease_s, now), "started_at": now},
                ):  # fmt: skip
                    return self._get(conn, job.job_id)
            # lost a race (should not happen under the row lock / write lock): try the next one

    def heartbeat(self, job_id: str, worker_id: str, lease_s: float, **progress: Any) -> bool:
        """Renew ``worker_id``'s lease on an active job for ``lease_s`` seconds and record progress
        (any of ``stage``, ``progress``, ``metrics``, ``workspace``). Returns ``False`` (and changes
        nothing) when the job is no longer active or is held by another worker: the worker must then
        stop the job (it was cancelled, or recovered as lost). On SQLite the worker lock is renewed too."""
        bad = set(progress) - {"stage", "progress", "metrics", "workspace"}
        if bad:
            raise ValueError(f"unknown progress field(s) {sorted(bad)}; known: stage, progress, metrics, workspace")
        values = self._values(progress, "running")
        now = utcnow()
        with self.engine.begin() as conn:
            res = conn.execute(
                update(jobs)
                .where(jobs.c.job_id == job_id, jobs.c.worker_id == worker_id, jobs.c.state.in_(ACTIVE_STATES))
                .values(lease_expires_at=later(lease_s, now), updated_at=now, **values)
            )
            if res.rowcount != 1:
                return False
            if self.dialect == "sqlite":
                self._take_sqlite_lock(conn, worker_id, lease_s, now)
        return True

    def recover_lost(self, now: str | None = None) -> builtins.list[str]:
        """Fail every leased (``running``/``succeeded``/``evaluating``) job whose lease expired before ``now``
        (reason ``worker_lost``, actor ``system``). Returns their ids. A job whose worker renewed its
        lease in the meantime is left alone (the update is conditional on the expired lease)."""
        now = now or utcnow()
        with self._read.connect() as conn:
            due = conn.execute(
                select(jobs.c.job_id, jobs.c.state).where(
                    jobs.c.state.in_(LEASED_STATES), jobs.c.lease_expires_at.is_not(None), jobs.c.lease_expires_at < now
                )
            ).all()
        done = []
        for jid, state in due:
            with self.engine.begin() as conn:
                if self._transition(
                    conn, jid, state, "failed", "system", "system",
                    "worker_lost: the worker's lease expired without a heartbeat", utcnow(),
                    {"finished_at": utcnow(), "lease_expires_at": None}, [jobs.c.lease_expires_at < now],
                ):  # fmt: skip
                    done.append(jid)
        return done


def _hint(actor: str, src: str) -> str:
    if actor == "agent":
        return "an agent may only cancel its own job (training_cancel); approval is a human's, out of band"
    if src in FINAL_STATES:
        return f"{src} is final; file a new training_request instead"
    return "call training_status (or `agent-rl-sandbox jobs show`) to see the job's state and events"
