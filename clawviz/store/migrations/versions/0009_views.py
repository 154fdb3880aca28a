"""The change queues (clawviz.store.changes): `analysis_mark` and `episode_dirty` for the
staleness check, `search_pending` for the search index, and the triggers that fill them. A
settings hash not yet in `analysis_mark` takes the full check once, then follows the queue;
`search_pending` starts with the calls the index has not read.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

from clawviz.store.changes import DROP_POSTGRES, DROP_SQLITE, trigger_ddl

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analysis_mark",
        sa.Column("settings_hash", sa.String(), nullable=False),
        sa.Column("analysis_version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("settings_hash"),
    )
    op.create_table(
        "episode_dirty",
        sa.Column("settings_hash", sa.String(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("settings_hash", "episode_id"),
    )
    op.create_index(op.f("ix_episode_dirty_seq"), "episode_dirty", ["seq"], unique=False)
    op.create_table(
        "search_pending",
        sa.Column("call_id", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("call_id"),
    )
    # Calls the search index has not read yet: the last anti-join of every call, done once.
    op.execute(
        'INSERT INTO search_pending (call_id) SELECT c.call_id FROM "call" c '
        "WHERE NOT EXISTS (SELECT 1 FROM search_doc d WHERE d.kind = 'call' AND d.key = c.call_id)"
    )
    for sql in trigger_ddl(op.get_bind().dialect.name, attempts=False):
        op.execute(sql)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for sql in DROP_POSTGRES if postgres else DROP_SQLITE:
        op.execute(sql)
    op.drop_index(op.f("ix_episode_dirty_seq"), table_name="episode_dirty")
    op.drop_table("episode_dirty")
    op.drop_table("analysis_mark")
    op.drop_table("search_pending")
