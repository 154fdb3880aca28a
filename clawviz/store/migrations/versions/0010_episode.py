"""Comments on calls: a reviewer's note on one call of an episode (issue 25 §5).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "call_comment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=False),
        sa.Column("call_id", sa.String(), nullable=False),
        sa.Column("reviewer", sa.String(), nullable=False),
        sa.Column("text", sa.String(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_call_comment_episode_id"), "call_comment", ["episode_id"])
    op.create_index(op.f("ix_call_comment_call_id"), "call_comment", ["call_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_call_comment_call_id"), table_name="call_comment")
    op.drop_index(op.f("ix_call_comment_episode_id"), table_name="call_comment")
    op.drop_table("call_comment")
