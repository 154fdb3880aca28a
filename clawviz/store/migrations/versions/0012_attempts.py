"""The attempts revision (clawviz.store.changes.ATTEMPTS, issue 26 §3): `attempts_change` and
the triggers that bump it on every change of a result's or an episode's attempt columns, the
Tasks queue's cache key. Migration 0009 now creates the change queues' triggers without these
(their table is made here).

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

from clawviz.store.changes import (
    ATTEMPTS_TRIGGERS_POSTGRES,
    ATTEMPTS_TRIGGERS_SQLITE,
    DROP_ATTEMPTS_POSTGRES,
    DROP_ATTEMPTS_SQLITE,
)

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attempts_change",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for sql in ATTEMPTS_TRIGGERS_POSTGRES if postgres else ATTEMPTS_TRIGGERS_SQLITE:
        op.execute(sql)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for sql in DROP_ATTEMPTS_POSTGRES if postgres else DROP_ATTEMPTS_SQLITE:
        op.execute(sql)
    op.drop_table("attempts_change")
