"""The Runs page's maintained aggregates (clawviz.store.runstats, issue 26 §3): `runs_mark`,
`runs_agg` and `runs_member`; indexes in the Runs table's default order, of the linked
transcripts and for the live indicator; two more change-queue triggers (an episode linked,
re-listed or deleted). The counts of each settings hash whose analysis follows the change queue
and has nothing queued are built here; any other hash is built on its first Runs view.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op
from sqlmodel import Session

from clawviz.store import runstats
from clawviz.store.changes import (
    DROP_RUNS_POSTGRES,
    DROP_RUNS_SQLITE,
    RUNS_TRIGGERS_POSTGRES,
    RUNS_TRIGGERS_SQLITE,
)

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_ORDER = (
    "(task_id IS NULL), task_id, (harness IS NULL), harness, (attempt IS NULL), attempt, episode_id"
)


def upgrade() -> None:
    op.create_table(
        "runs_mark",
        sa.Column("settings_hash", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("settings_hash"),
    )
    op.create_table(
        "runs_agg",
        sa.Column("settings_hash", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False),
        sa.Column("detail", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("settings_hash", "kind", "key"),
    )
    op.create_table(
        "runs_member",
        sa.Column("settings_hash", sa.String(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=False),
        sa.Column("keys_json", sa.String(), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("settings_hash", "episode_id"),
    )
    op.execute(
        f"CREATE INDEX ix_episode_runs_order ON episode ({_ORDER}) WHERE primary_episode IS NULL"
    )
    op.execute(
        "CREATE INDEX ix_episode_linked ON episode (primary_episode) "
        "WHERE primary_episode IS NOT NULL"
    )
    op.create_index("ix_episode_live", "episode", ["last_ts", "n_calls"])
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    for sql in RUNS_TRIGGERS_POSTGRES if postgres else RUNS_TRIGGERS_SQLITE:
        op.execute(sql)
    session = Session(bind=bind)
    hashes = [
        str(h)
        for (h,) in bind.execute(
            sa.text(
                "SELECT settings_hash FROM analysis_mark m WHERE NOT EXISTS "
                "(SELECT 1 FROM episode_dirty q WHERE q.settings_hash = m.settings_hash)"
            )
        )
    ]
    for h in hashes:
        runstats.rebuild(session, h)
    session.flush()


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for sql in DROP_RUNS_POSTGRES if postgres else DROP_RUNS_SQLITE:
        op.execute(sql)
    op.execute("DROP INDEX IF EXISTS ix_episode_runs_order")
    op.execute("DROP INDEX IF EXISTS ix_episode_linked")
    op.drop_index("ix_episode_live", table_name="episode")
    op.drop_table("runs_member")
    op.drop_table("runs_agg")
    op.drop_table("runs_mark")
