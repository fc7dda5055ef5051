"""Identities: the ``identities`` table of bearer tokens a human issues to agents (issue 15).

One row per identity: its id (the owner id stored on everything it creates), a unique name, the
SHA-256 of its token (the token itself is shown once, at creation, and never stored), its teams (a
JSON list; identities sharing a team may act on each other's sandboxes and jobs), who created it and
when, and when and by whom it was revoked (a revoked token is refused). Only a new table; downgrade
drops it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "identities",
        sa.Column("identity_id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("teams_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("revoked_at", sa.String(40)),
        sa.Column("revoked_by", sa.String(200)),
    )


def downgrade() -> None:
    op.drop_table("identities")
