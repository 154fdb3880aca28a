"""The full-text search documents (clawviz.store.search). The FTS5 table (SQLite) or the GIN
index (PostgreSQL) beside it is created by the search module on first use.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "search_doc",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("call_id", sa.String(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=True),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("text", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "key"),
    )
    op.create_index(op.f("ix_search_doc_call_id"), "search_doc", ["call_id"], unique=False)
    op.create_index(op.f("ix_search_doc_episode_id"), "search_doc", ["episode_id"], unique=False)
