"""v1: the schema of the first release (stores made before migrations existed).

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blob",
        sa.Column("hash", sa.String(), nullable=False),
        sa.Column("text", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("hash"),
    )
    op.create_table(
        "decision",
        sa.Column("settings_hash", sa.String(), nullable=False),
        sa.Column("call_id", sa.String(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("role_reason", sa.String(), nullable=False),
        sa.Column("parent_call", sa.String(), nullable=True),
        sa.Column("retry_of", sa.String(), nullable=True),
        sa.Column("segment", sa.Integer(), nullable=True),
        sa.Column("thread", sa.String(), nullable=False),
        sa.Column("linked_call", sa.String(), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("settings_hash", "call_id"),
    )
    op.create_index(op.f("ix_decision_episode_id"), "decision", ["episode_id"], unique=False)
    op.create_table(
        "episode",
        sa.Column("episode_id", sa.String(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=True),
        sa.Column("harness", sa.String(), nullable=True),
        sa.Column("model", sa.String(), nullable=True),
        sa.Column("model_role", sa.String(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("n_calls", sa.Integer(), nullable=False),
        sa.Column("source_kind", sa.String(), nullable=False),
        sa.Column("first_ts", sa.Float(), nullable=True),
        sa.Column("last_ts", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("episode_id"),
    )
    op.create_index(op.f("ix_episode_harness"), "episode", ["harness"], unique=False)
    op.create_index(op.f("ix_episode_task_id"), "episode", ["task_id"], unique=False)
    op.create_table(
        "episode_status",
        sa.Column("settings_hash", sa.String(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("reasons_json", sa.String(), nullable=False),
        sa.Column("reward", sa.Float(), nullable=True),
        sa.Column("advantage", sa.Float(), nullable=True),
        sa.Column("n_segments", sa.Integer(), nullable=False),
        sa.Column("paths_json", sa.String(), nullable=False),
        sa.Column("settings_json", sa.String(), nullable=False),
        sa.Column("computed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("settings_hash", "episode_id"),
    )
    op.create_table(
        "message",
        sa.Column("hash", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("canonical_json", sa.String(), nullable=False),
        sa.Column("raw_json", sa.String(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("hash"),
    )
    op.create_table(
        "meta",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("value", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "review",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("decision", sa.String(), nullable=False),
        sa.Column("reviewer", sa.String(), nullable=False),
        sa.Column("note", sa.String(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_review_task_id"), "review", ["task_id"], unique=False)
    op.create_table(
        "source",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("sha256", sa.String(), nullable=False),
        sa.Column("format", sa.String(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("n_lines", sa.Integer(), nullable=False),
        sa.Column("n_calls", sa.Integer(), nullable=False),
        sa.Column("n_episodes", sa.Integer(), nullable=False),
        sa.Column("n_rejected", sa.Integer(), nullable=False),
        sa.Column("ingested_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_source_path"), "source", ["path"], unique=False)
    op.create_index(op.f("ix_source_sha256"), "source", ["sha256"], unique=True)
    op.create_table(
        "task",
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("category", sa.String(), nullable=True),
        sa.Column("grading_type", sa.String(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("folder", sa.String(), nullable=False),
        sa.Column("instruction", sa.String(), nullable=False),
        sa.Column("data_json", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("task_id"),
    )
    op.create_index(op.f("ix_task_category"), "task", ["category"], unique=False)
    op.create_table(
        "call",
        sa.Column("call_id", sa.String(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=True),
        sa.Column("source_id", sa.Integer(), nullable=True),
        sa.Column("source_file", sa.String(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=True),
        sa.Column("endpoint", sa.String(), nullable=False),
        sa.Column("method", sa.String(), nullable=False),
        sa.Column("url", sa.String(), nullable=False),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("t_request", sa.Float(), nullable=True),
        sa.Column("t_response", sa.Float(), nullable=True),
        sa.Column("model", sa.String(), nullable=True),
        sa.Column("model_role", sa.String(), nullable=True),
        sa.Column("turn_type", sa.String(), nullable=True),
        sa.Column("session_id", sa.String(), nullable=True),
        sa.Column("task_id", sa.String(), nullable=True),
        sa.Column("harness", sa.String(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("stop_reason", sa.String(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("cache_read_input_tokens", sa.Integer(), nullable=True),
        sa.Column("cache_creation_input_tokens", sa.Integer(), nullable=True),
        sa.Column("failure", sa.String(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("delivered", sa.Boolean(), nullable=True),
        sa.Column("source_kind", sa.String(), nullable=False),
        sa.Column("system_hash", sa.String(), nullable=True),
        sa.Column("tools_json", sa.String(), nullable=False),
        sa.Column("tools_hash", sa.String(), nullable=True),
        sa.Column("envelope_hash", sa.String(), nullable=True),
        sa.Column("message_hashes", sa.String(), nullable=False),
        sa.Column("response_json", sa.String(), nullable=True),
        sa.Column("raw_response", sa.String(), nullable=True),
        sa.Column("headers_json", sa.String(), nullable=False),
        sa.Column("rollout_json", sa.String(), nullable=True),
        sa.Column("extra_json", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["source.id"],
        ),
        sa.PrimaryKeyConstraint("call_id"),
    )
    op.create_index(op.f("ix_call_episode_id"), "call", ["episode_id"], unique=False)
    op.create_index(op.f("ix_call_source_id"), "call", ["source_id"], unique=False)
    op.create_table(
        "rejected_line",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=True),
        sa.Column("source_file", sa.String(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("raw", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["source.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_rejected_line_source_id"), "rejected_line", ["source_id"], unique=False
    )
    op.create_table(
        "result",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=True),
        sa.Column("harness", sa.String(), nullable=True),
        sa.Column("model", sa.String(), nullable=True),
        sa.Column("model_role", sa.String(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("reward", sa.Float(), nullable=True),
        sa.Column("checks_json", sa.String(), nullable=False),
        sa.Column("rubric_json", sa.String(), nullable=False),
        sa.Column("workspace_before", sa.String(), nullable=True),
        sa.Column("workspace_after", sa.String(), nullable=True),
        sa.Column("source_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["source.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_result_episode_id"), "result", ["episode_id"], unique=True)
    op.create_index(op.f("ix_result_task_id"), "result", ["task_id"], unique=False)
