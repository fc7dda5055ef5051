"""Owners: the ``owner`` column of ``trajectories`` and ``sandboxes`` (issue 10 §4).

A sandbox and its trajectories belong to the caller that created them (``tools/_caller.py``): the
owner id of an MCP session (``mcp:<token>``), later of an HTTP identity, or ``operator`` for the CLI.
Rows written before this revision keep ``NULL``: they belong to no agent (only the operator may act
on them). Adds an index on ``trajectories.owner`` (``trajectory_list`` filters by it). Idempotent on a
database that already has the columns.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    insp = sa.inspect(op.get_bind())
    for table in ("trajectories", "sandboxes"):
        if "owner" not in {c["name"] for c in insp.get_columns(table)}:
            with op.batch_alter_table(table) as batch:
                batch.add_column(sa.Column("owner", sa.String(64)))
    if "ix_trajectories_owner" not in {ix["name"] for ix in insp.get_indexes("trajectories")}:
        op.create_index("ix_trajectories_owner", "trajectories", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_trajectories_owner", table_name="trajectories")
    for table in ("sandboxes", "trajectories"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("owner")
