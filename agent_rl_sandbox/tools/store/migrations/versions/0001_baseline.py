"""Baseline: the store schema as the hand-written migrations left it (their schema version "2").

On an empty database this creates every table and index. On a database made before Alembic (it has a
``trajectories`` table but no ``alembic_version``) it adopts what is there instead, exactly as the old
hand-written migration did: tables that are missing are created, the version-2 columns of
``trajectories`` (``agent_name``, ``external_id``, ``origin``, ``meta_json``) are added where missing and
backfilled (``agent_name`` from ``agent_json``, ``origin = 'sandbox'`` for sandbox episodes), missing
indexes are created, and nothing is dropped or rewritten. A version-2 database therefore only gets
its ``alembic_version`` row. ``ars_meta.schema_version`` is left at (or set to) ``"2"``.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import json
import logging

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

log = logging.getLogger("agent_rl_sandbox.tools.store.migrations")

_V2_COLUMNS = {
    "agent_name": sa.String(200),
    "external_id": sa.String(200),
    "origin": sa.String(40),
    "meta_json": sa.Text(),
}

_INDEXES = {
    "ix_trajectories_task_id": ("trajectories", ["task_id"]),
    "ix_trajectories_behaviour": ("trajectories", ["behaviour"]),
    "ix_trajectories_sandbox_id": ("trajectories", ["sandbox_id"]),
    "ix_trajectories_agent_name": ("trajectories", ["agent_name"]),
    "ix_trajectories_external_id": ("trajectories", ["external_id"]),
    "ix_trajectories_created": ("trajectories", ["created_at"]),
    "ix_steps_session": ("steps", ["session_id"]),
}


def _trajectories() -> None:
    op.create_table(
        "trajectories",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column("agent_json", sa.Text(), nullable=False),
        sa.Column("task_id", sa.String(200)),
        sa.Column("behaviour", sa.String(100)),
        sa.Column("split", sa.String(16)),
        sa.Column("sandbox_id", sa.String(64)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("finished_at", sa.String(40)),
        sa.Column("step_count", sa.Integer(), nullable=False),
        sa.Column("reward", sa.Float()),
        sa.Column("passed", sa.Boolean()),
        sa.Column("self_report_only", sa.Boolean()),
        sa.Column("final_message", sa.Text()),
        sa.Column("parent_session_id", sa.String(64)),
        sa.Column("reward_components_json", sa.Text()),
        sa.Column("score_json", sa.Text()),
        *(sa.Column(name, type_) for name, type_ in _V2_COLUMNS.items()),
    )


def _steps() -> None:
    op.create_table(
        "steps",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("trajectories.session_id"), nullable=False),
        sa.Column("step_id", sa.Integer(), nullable=False),
        sa.Column("client_step_id", sa.String(200)),
        sa.Column("provenance", sa.String(16), nullable=False),
        sa.Column("data_json", sa.Text(), nullable=False),
        sa.UniqueConstraint("session_id", "step_id", name="uq_steps_session_step"),
        sa.UniqueConstraint("session_id", "client_step_id", name="uq_steps_session_client_step"),
    )


def _sandboxes() -> None:
    op.create_table(
        "sandboxes",
        sa.Column("sandbox_id", sa.String(64), primary_key=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("session_id", sa.String(64), sa.ForeignKey("trajectories.session_id")),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("base_commit", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("isolation", sa.String(32), nullable=False),
        sa.Column("claims_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
    )


def _hook_pending() -> None:
    op.create_table(
        "hook_pending",
        sa.Column("session_id", sa.String(64), sa.ForeignKey("trajectories.session_id"), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("data_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
        sa.PrimaryKeyConstraint("session_id", "key", name="pk_hook_pending"),
    )


def _ars_meta() -> None:
    op.create_table(
        "ars_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )


_TABLES = {  # in foreign-key order
    "trajectories": _trajectories,
    "steps": _steps,
    "sandboxes": _sandboxes,
    "hook_pending": _hook_pending,
    "ars_meta": _ars_meta,
}


def _backfill(bind) -> int:
    """Fill the version-2 columns of rows written before they existed (the old ``_migrate``'s rules)."""
    t = sa.table(
        "trajectories",
        sa.column("session_id"), sa.column("agent_json"), sa.column("agent_name"),
        sa.column("origin"), sa.column("sandbox_id"),
    )  # fmt: skip
    rows = bind.execute(sa.select(t.c.session_id, t.c.agent_json).where(t.c.agent_name.is_(None))).all()
    for sid, agent_json in rows:
        try:
            name = json.loads(agent_json).get("name")
        except (ValueError, AttributeError):
            name = None
        bind.execute(sa.update(t).where(t.c.session_id == sid).values(agent_name=name))
    bind.execute(sa.update(t).where(t.c.origin.is_(None), t.c.sandbox_id.is_not(None)).values(origin="sandbox"))
    return len(rows)


def upgrade() -> None:
    bind = op.get_bind()
    insp = sa.inspect(bind)
    existing = set(insp.get_table_names())
    adopting = "trajectories" in existing
    for name, create in _TABLES.items():
        if name not in existing:
            create()
    if adopting:
        have = {c["name"] for c in insp.get_columns("trajectories")}
        added = [name for name in _V2_COLUMNS if name not in have]
        for name in added:
            op.add_column("trajectories", sa.Column(name, _V2_COLUMNS[name]))
        if added:
            n = _backfill(bind)
            log.info("adopted a version-1 store: added %s, backfilled %d row(s)", added, n)
    have_ix = set()
    for table in ("trajectories", "steps"):
        have_ix |= {ix["name"] for ix in sa.inspect(bind).get_indexes(table)}
    for ix_name, (table, cols) in _INDEXES.items():
        if ix_name not in have_ix:
            op.create_index(ix_name, table, cols)
    meta = sa.table("ars_meta", sa.column("key"), sa.column("value"))
    found = bind.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
    if found is None:
        bind.execute(sa.insert(meta).values(key="schema_version", value="2"))
    elif found != "2":
        bind.execute(sa.update(meta).where(meta.c.key == "schema_version").values(value="2"))


def downgrade() -> None:
    for name in reversed(list(_TABLES)):
        op.drop_table(name)
