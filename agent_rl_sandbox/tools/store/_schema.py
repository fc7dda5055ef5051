"""The store's tables (SQLAlchemy Core), the single description of the current schema.

The repositories query these objects; the Alembic migrations in ``migrations/versions/`` create and
change the real tables, and ``tests/tools/store`` checks that a database brought to the head revision
matches this module exactly (no drift). Changing a table here therefore needs a new migration.

Tables:

- ``trajectories``: one row per trajectory (ATIF header, status, score, JSON blobs for agent, meta,
  reward components and the stored score report).
- ``steps``: append-only steps, numbered densely per trajectory (``step_id``), with an optional client
  step id for idempotent retries; ``data_json`` is the whole redacted step.
- ``sandboxes``: one row per sandbox (its task, trajectory, working copy path, base commit, status,
  isolation kind and claimed paths as a JSON list).
- ``owner`` (``trajectories`` and ``sandboxes``, revision 0002): the owner id of the caller that created
  the row (``agent_rl_sandbox.tools._caller``); ``NULL`` on rows from before it (they belong to no agent).
- ``hook_pending``: hook events waiting for their partner (a PreToolUse until its PostToolUse, a Stop
  until the turn really ends); redacted like steps and deleted when they become steps.
- ``jobs``: one row per training job (state, requester, canonical spec and its hash, the approved hash
  and who approved, expiry, the worker's lease and progress); see :mod:`agent_rl_sandbox.tools.jobs`.
- ``job_events``: the append-only log of job transitions (time, actor, who, from, to, reason).
- ``job_worker_lock``: the lock row with a lease that keeps one worker at a time on SQLite.
- ``identities`` (revision 0005): bearer-token identities of the HTTP server (id, unique name, SHA-256
  of the token, teams as a JSON list, created and revoked by whom and when); see
  :mod:`agent_rl_sandbox.tools.identities`.
- ``ars_meta``: key/value rows. ``schema_version`` is the marker of the hand-written schema versions
  used before Alembic (kept at ``"2"``, so an older release opening the database leaves it alone);
  Alembic's own ``alembic_version`` table records the revision.
"""

from __future__ import annotations

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
)

LEGACY_SCHEMA_VERSION = "2"
"""The last hand-written schema version (``ars_meta.schema_version``); the Alembic baseline is this schema."""

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
    Column("agent_name", String(200), index=True),
    Column("external_id", String(200), index=True),
    Column("origin", String(40)),
    Column("meta_json", Text),
    Column("owner", String(64), index=True),
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
    Column("owner", String(64)),
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

ars_meta = Table(
    "ars_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

jobs = Table(
    "jobs",
    metadata,
    Column("job_id", String(64), primary_key=True),
    Column("state", String(24), nullable=False),
    Column("requester", String(200), nullable=False),
    Column("trainer", String(32), nullable=False),
    Column("behaviour", String(200), nullable=False),
    Column("spec_json", Text, nullable=False),
    Column("spec_hash", String(64), nullable=False),
    Column("validation_json", Text),
    Column("approved_hash", String(64)),
    Column("decided_by", String(200)),
    Column("decided_at", String(40)),
    Column("decision_note", Text),
    Column("reason", Text),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
    Column("expires_at", String(40), nullable=False),
    Column("worker_id", String(200)),
    Column("lease_expires_at", String(40)),
    Column("started_at", String(40)),
    Column("finished_at", String(40)),
    Column("stage", String(32)),
    Column("progress", Float),
    Column("metrics_json", Text),
    Column("workspace", Text),
)

job_events = Table(
    "job_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(64), ForeignKey("jobs.job_id"), nullable=False),
    Column("at", String(40), nullable=False),
    Column("actor", String(16), nullable=False),
    Column("who", String(200), nullable=False),
    Column("from_state", String(24)),
    Column("to_state", String(24), nullable=False),
    Column("reason", Text, nullable=False),
)

job_worker_lock = Table(
    "job_worker_lock",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("holder", String(200), nullable=False),
    Column("expires_at", String(40), nullable=False),
)

adapters = Table(
    "adapters",
    metadata,
    Column("adapter_id", String(64), primary_key=True),
    Column("behaviour", String(200), nullable=False),
    Column("base_model", String(500), nullable=False),
    Column("job_id", String(64), ForeignKey("jobs.job_id"), nullable=False, unique=True),
    Column("spec_hash", String(64), nullable=False),
    Column("path", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("gate_report_json", Text),
    Column("state", String(16), nullable=False),
    Column("served_name", String(200), nullable=False),
    Column("previous_adapter_id", String(64)),
    Column("unhooks_json", Text),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
)

adapter_events = Table(
    "adapter_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("adapter_id", String(64), ForeignKey("adapters.adapter_id"), nullable=False),
    Column("behaviour", String(200), nullable=False),
    Column("at", String(40), nullable=False),
    Column("actor", String(16), nullable=False),
    Column("who", String(200), nullable=False),
    Column("from_state", String(16)),
    Column("to_state", String(16), nullable=False),
    Column("reason", Text, nullable=False),
)

identities = Table(
    "identities",
    metadata,
    Column("identity_id", String(64), primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("teams_json", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("revoked_at", String(40)),
    Column("revoked_by", String(200)),
)

Index("ix_steps_session", steps.c.session_id)
Index("ix_jobs_state_created", jobs.c.state, jobs.c.created_at)
Index("ix_jobs_requester", jobs.c.requester)
Index("ix_job_events_job", job_events.c.job_id, job_events.c.id)
Index("ix_trajectories_created", trajectories.c.created_at)
Index("ix_adapters_behaviour_state", adapters.c.behaviour, adapters.c.state)
Index("ix_adapter_events_adapter", adapter_events.c.adapter_id, adapter_events.c.id)
