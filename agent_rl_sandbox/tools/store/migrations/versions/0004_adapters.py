"""Adapter registry: the ``adapters`` table and its append-only ``adapter_events`` audit log.

``adapters`` holds one row per adapter a gate-passing job produced (behaviour, base model, job id,
spec hash, path, content hash of its files, gate report, state, the name it is served under, the
pinned previous adapter for rollback, the last unhook dry run); ``adapter_events`` one row per
registry change (who, when, from, to, reason). Only new tables; downgrade drops them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adapters",
        sa.Column("adapter_id", sa.String(64), primary_key=True),
        sa.Column("behaviour", sa.String(200), nullable=False),
        sa.Column("base_model", sa.String(500), nullable=False),
        sa.Column("job_id", sa.String(64), sa.ForeignKey("jobs.job_id"), nullable=False, unique=True),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("gate_report_json", sa.Text()),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("served_name", sa.String(200), nullable=False),
        sa.Column("previous_adapter_id", sa.String(64)),
        sa.Column("unhooks_json", sa.Text()),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
    )
    op.create_index("ix_adapters_behaviour_state", "adapters", ["behaviour", "state"])
    op.create_table(
        "adapter_events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("adapter_id", sa.String(64), sa.ForeignKey("adapters.adapter_id"), nullable=False),
        sa.Column("behaviour", sa.String(200), nullable=False),
        sa.Column("at", sa.String(40), nullable=False),
        sa.Column("actor", sa.String(16), nullable=False),
        sa.Column("who", sa.String(200), nullable=False),
        sa.Column("from_state", sa.String(16)),
        sa.Column("to_state", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
    )
    op.create_index("ix_adapter_events_adapter", "adapter_events", ["adapter_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_adapter_events_adapter", table_name="adapter_events")
    op.drop_table("adapter_events")
    op.drop_index("ix_adapters_behaviour_state", table_name="adapters")
    op.drop_table("adapters")
