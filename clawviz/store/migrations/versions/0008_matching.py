"""episode.primary_episode, episode.cross_check: one episode per session (issue 29 §4).

A harness transcript of a session whose wire log is also loaded is linked to the wire's
episode (`primary_episode`, set by `clawviz.jobs.sessions.link_sessions`): the wire is the
primary record, the transcript a cross-check, and exports skip linked transcripts.
`cross_check` on the wire's episode says, as JSON, which transcript was compared and where the
two disagree about kept calls (NULL: not compared). Existing rows take NULL.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("episode") as batch:
        batch.add_column(sa.Column("primary_episode", sa.String(), nullable=True))
        batch.add_column(sa.Column("cross_check", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("episode") as batch:
        batch.drop_column("cross_check")
        batch.drop_column("primary_episode")
