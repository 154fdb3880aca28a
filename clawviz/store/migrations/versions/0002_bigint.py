"""Counts, sizes, line numbers and token numbers as BIGINT (PostgreSQL's int4 stopped at 2^31).

SQLite stores every integer in up to 8 bytes whatever the declared type, so this step changes
nothing there.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

COLUMNS = (
    ("decision", "segment", True),
    ("decision", "depth", False),
    ("episode", "attempt", True),
    ("episode", "n_calls", False),
    ("episode_status", "n_segments", False),
    ("message", "size_bytes", False),
    ("source", "size_bytes", False),
    ("source", "n_lines", False),
    ("source", "n_calls", False),
    ("source", "n_episodes", False),
    ("source", "n_rejected", False),
    ("call", "line", False),
    ("call", "seq", True),
    ("call", "http_status", True),
    ("call", "attempt", True),
    ("call", "input_tokens", True),
    ("call", "output_tokens", True),
    ("call", "cache_read_input_tokens", True),
    ("call", "cache_creation_input_tokens", True),
    ("rejected_line", "line", False),
    ("result", "attempt", True),
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    for table, column, nullable in COLUMNS:
        op.alter_column(
            table, column, type_=sa.BigInteger(), existing_type=sa.Integer(),
            existing_nullable=nullable,
        )  # fmt: skip
