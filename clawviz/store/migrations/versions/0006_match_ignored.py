"""decision.match_ignored: what tree matching left out of each call's request, and why.

A JSON list (`CallDecision.match_ignored`, `recon.matchview`), shown by the call inspector.
Stored decisions are recomputed anyway (ANALYSIS_VERSION changed with it), so existing rows
take the empty list.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decision") as batch:
        batch.add_column(
            sa.Column("match_ignored", sa.String(), nullable=False, server_default="[]")
        )


def downgrade() -> None:
    with op.batch_alter_table("decision") as batch:
        batch.drop_column("match_ignored")
