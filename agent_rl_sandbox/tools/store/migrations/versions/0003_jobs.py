"""Training jobs: the ``jobs`` table, its append-only ``job_events`` log and the ``job_worker_lock`` row.

``jobs`` holds one row per training job (state, requester, canonical spec and its hash, the hash a
human approved, expiry, the worker's lease, stage and progress); ``job_events`` one row per state
transition (time, actor, who, from, to, reason); ``job_worker_lock`` the lock row with a lease that
keeps a single worker at a time on SQLite (PostgreSQL workers claim with ``FOR UPDATE SKIP LOCKED``
and do not use it). Only new tables: nothing existing is touched, and downgrade drops them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("job_id", sa.String(64), primary_key=True),
        sa.Column("state", sa.String(24), nullable=False),
        sa.Column("requester", sa.String(200), nullable=False),
        sa.Column("trainer", sa.String(32), nullable=False),
        sa.Column("behaviour", sa.String(200), nullable=False),
        sa.Column("spec_json", sa.Text(), nullable=False),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("validation_json", sa.Text()),
        sa.Column("approved_hash", sa.String(64)),
        sa.Column("decided_by", sa.String(200)),
        sa.Column("decided_at", sa.String(40)),
        sa.Column("decision_note", sa.Text()),
        sa.Column("reason", sa.Text()),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("updated_at", sa.String(40), nullable=False),
        sa.Column("expires_at", sa.String(40), nullable=False),
        sa.Column("worker_id", sa.String(200)),
        sa.Column("lease_expires_at", sa.String(40)),
        sa.Column("started_at", sa.String(40)),
        sa.Column("finished_at", sa.String(40)),
        sa.Column("stage", sa.String(32)),
        sa.Column("progress", sa.Float()),
        sa.Column("metrics_json", sa.Text()),
        sa.Column("workspace", sa.Text()),
    )
    op.create_index("ix_jobs_state_created", "jobs", ["state", "created_at"])
    op.create_index("ix_jobs_requester", "jobs", ["requester"])
    op.create_table(
        "job_events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.String(64), sa.ForeignKey("jobs.job_id"), nullable=False),
        sa.Column("at", sa.String(40), nullable=False),
        sa.Column("actor", sa.String(16), nullable=False),
        sa.Column("who", sa.String(200), nullable=False),
        sa.Column("from_state", sa.String(24)),
        sa.Column("to_state", sa.String(24), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
    )
    op.create_index("ix_job_events_job", "job_events", ["job_id", "id"])
    op.create_table(
        "job_worker_lock",
        sa.Column("name", sa.String(32), primary_key=True),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("expires_at", sa.String(40), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_worker_lock")
    op.drop_index("ix_job_events_job", table_name="job_events")
    op.drop_table("job_events")
    op.drop_index("ix_jobs_requester", table_name="jobs")
    op.drop_index("ix_jobs_state_created", table_name="jobs")
    op.drop_table("jobs")
