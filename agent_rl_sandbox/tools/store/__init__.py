"""The store: engine, schema, Alembic migrations and one repository per aggregate.

Public surface::

    Store(url)                    open SQLite (WAL) or PostgreSQL, migrate to the head revision; holds
      .trajectories               TrajectoryRepository: start, log_steps, finish, import_trajectory, get, list...
      .sandboxes                  SandboxRepository: add, get, update, list -> SandboxRecord
      .hook_events                HookEventRepository: transaction(session_id) -> HookEventTx
      .begin_episode(...)         a sandbox episode's start in one transaction -> EpisodeStart (NewSandbox)
    SandboxRecord, PendingEvent, AppendResult, BulkResult    typed records the repositories return
    StepRejected, TrajectoryExists    a bulk-imported step that cannot be stored; a bulk import's id is taken
    StepsChanged                  finish(steps_scored=N) found another step count (a step landed while scoring)
    StoreError, OUTCOMES, new_id, utcnow, normalise_time
    lone_surrogate_at, NOT_UNICODE   where a value holds text no store can hold (a lone surrogate); the reason
    Redactor                      detect-secrets based redaction ([REDACTED:<type>] markers), loaded lazily
    step_problems, unanswered_calls   structural rules every stored step obeys

Modules: ``_engine`` (engine creation), ``_schema`` (SQLAlchemy Core tables), ``_migrations`` (Alembic,
run at open) with ``migrations/`` (env.py and versions/), ``_trajectories``, ``_sandboxes``,
``_hook_events`` (repositories), ``_episodes`` (the reset's rows in one transaction), ``_common`` (error, ids, times), ``_redact`` and ``_integrity`` (the
write-path rules: secrets never reach the store, steps pair calls with results).

Importing this package is light (SQLAlchemy, no Alembic, no detect-secrets): the hook command opens a
store on every event.
"""

from agent_rl_sandbox.tools.store._common import (
    NOT_UNICODE,
    StoreError,
    lone_surrogate_at,
    new_id,
    normalise_time,
    utcnow,
)
from agent_rl_sandbox.tools.store._episodes import EpisodeStart, NewSandbox
from agent_rl_sandbox.tools.store._hook_events import HookEventRepository, HookEventTx, PendingEvent
from agent_rl_sandbox.tools.store._integrity import step_problems, unanswered_calls
from agent_rl_sandbox.tools.store._sandboxes import SandboxRecord, SandboxRepository
from agent_rl_sandbox.tools.store._store import Store
from agent_rl_sandbox.tools.store._trajectories import (
    OUTCOMES,
    AppendResult,
    BulkResult,
    StepRejected,
    StepsChanged,
    TrajectoryExists,
    TrajectoryRepository,
    unknown_trajectory,
)


def __getattr__(name: str):
    if name == "Redactor":
        from agent_rl_sandbox.tools.store._redact import Redactor

        return Redactor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "NOT_UNICODE",
    "OUTCOMES",
    "AppendResult",
    "BulkResult",
    "EpisodeStart",
    "HookEventRepository",
    "HookEventTx",
    "NewSandbox",
    "PendingEvent",
    "Redactor",
    "SandboxRecord",
    "SandboxRepository",
    "StepRejected",
    "StepsChanged",
    "Store",
    "StoreError",
    "unknown_trajectory",
    "TrajectoryExists",
    "TrajectoryRepository",
    "lone_surrogate_at",
    "new_id",
    "normalise_time",
    "step_problems",
    "unanswered_calls",
    "utcnow",
]
