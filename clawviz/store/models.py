"""Store tables (SQLModel). Schema changes bump SCHEMA_VERSION and add a step in db.migrate."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Field, SQLModel

SCHEMA_VERSION = 2


def utcnow() -> datetime:
    return datetime.now(UTC)


class Meta(SQLModel, table=True):
    """Key/value facts about the store itself (schema_version)."""

    key: str = Field(primary_key=True)
    value: str


class Source(SQLModel, table=True):
    """One ingested file."""

    id: int | None = Field(default=None, primary_key=True)
    path: str = Field(index=True)
    """Path as given (relative to the ingest root where possible)."""
    sha256: str = Field(index=True, unique=True)
    """Content hash: re-ingesting the same bytes adds nothing."""
    format: str
    """exchange | results | transcript_pi | transcript_claude_code | unknown."""
    size_bytes: int = 0
    n_lines: int = 0
    n_calls: int = 0
    n_episodes: int = 0
    n_rejected: int = 0
    ingested_at: datetime = Field(default_factory=utcnow)


class Blob(SQLModel, table=True):
    """Content-addressed text (system prompts, tool lists, request envelopes), stored once."""

    hash: str = Field(primary_key=True)
    text: str


class MessageRow(SQLModel, table=True):
    """A distinct message, keyed by the hash of its canonical form, stored once."""

    __tablename__ = "message"
    hash: str = Field(primary_key=True)
    role: str
    canonical_json: str
    """The internal-shape message (clawviz.types) used for matching and display."""
    raw_json: str
    """The message exactly as the first request that carried it sent it."""
    size_bytes: int = 0


class Episode(SQLModel, table=True):
    """One attempt of one task in one harness."""

    episode_id: str = Field(primary_key=True)
    task_id: str | None = Field(default=None, index=True)
    harness: str | None = Field(default=None, index=True)
    model: str | None = None
    model_role: str | None = None
    attempt: int | None = None
    n_calls: int = 0
    source_kind: str = "exchange"
    """exchange | transcript."""
    first_ts: float | None = None
    last_ts: float | None = None


class CallRow(SQLModel, table=True):
    """One recorded call. Messages are referenced by hash; the response is stored inline."""

    __tablename__ = "call"
    call_id: str = Field(primary_key=True)
    episode_id: str | None = Field(default=None, index=True)
    source_id: int | None = Field(default=None, foreign_key="source.id", index=True)
    source_file: str
    line: int
    seq: int | None = None
    endpoint: str
    method: str = "POST"
    url: str = ""
    http_status: int | None = None
    t_request: float | None = None
    t_response: float | None = None
    model: str | None = None
    model_role: str | None = None
    turn_type: str | None = None
    session_id: str | None = None
    task_id: str | None = None
    harness: str | None = None
    attempt: int | None = None
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    failure: str | None = None
    error: str | None = None
    delivered: bool | None = None
    source_kind: str = "exchange"
    system_hash: str | None = None
    """Blob hash of the system text."""
    tools_json: str = "[]"
    """Tool names offered."""
    tools_hash: str | None = None
    """Blob hash of the full tool definitions."""
    envelope_hash: str | None = None
    """Blob hash of the request body without messages/system/tools (model, max_tokens, ...)."""
    message_hashes: str = "[]"
    """JSON list of MessageRow hashes, in request order."""
    response_json: str | None = None
    """Internal-shape assistant message rebuilt from the response."""
    raw_response: str | None = None
    """Response body (JSON text or SSE text) as logged."""
    headers_json: str = "{}"
    rollout_json: str | None = None
    extra_json: str = "{}"


class RejectedLine(SQLModel, table=True):
    """A line that could not be loaded, kept verbatim with file, line and reason."""

    __tablename__ = "rejected_line"
    id: int | None = Field(default=None, primary_key=True)
    source_id: int | None = Field(default=None, foreign_key="source.id", index=True)
    source_file: str
    line: int
    reason: str
    raw: str


class Task(SQLModel, table=True):
    """A benchmark task (ClawGym folder or PinchBench markdown)."""

    task_id: str = Field(primary_key=True)
    name: str = ""
    category: str | None = Field(default=None, index=True)
    grading_type: str | None = None
    kind: str = "clawgym"
    """clawgym | pinchbench."""
    folder: str = ""
    instruction: str = ""
    data_json: str = "{}"
    """The task's own metadata (data_entry.json or front matter)."""


class Result(SQLModel, table=True):
    """The verifier's result for one attempt (results.jsonl line)."""

    id: int | None = Field(default=None, primary_key=True)
    episode_id: str = Field(index=True, unique=True)
    task_id: str | None = Field(default=None, index=True)
    harness: str | None = None
    model: str | None = None
    model_role: str | None = None
    attempt: int | None = None
    reward: float | None = None
    checks_json: str = "{}"
    rubric_json: str = "{}"
    workspace_before: str | None = None
    """Absolute path of a folder or archive."""
    workspace_after: str | None = None
    source_id: int | None = Field(default=None, foreign_key="source.id")


class Review(SQLModel, table=True):
    """One sign-off decision; append-only. The latest per task is the task's status."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    decision: str
    """accept | revise | reject."""
    reviewer: str
    note: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class DecisionRow(SQLModel, table=True):
    """A call's decision under one settings hash."""

    __tablename__ = "decision"
    settings_hash: str = Field(primary_key=True)
    call_id: str = Field(primary_key=True)
    episode_id: str = Field(index=True)
    role: str
    state: str
    reason: str | None = None
    role_reason: str = ""
    parent_call: str | None = None
    retry_of: str | None = None
    segment: int | None = None
    thread: str = ""
    linked_call: str | None = None
    depth: int = 0
    match_ignored: str = "[]"
    """JSON list of what tree matching ignored in the request (CallDecision.match_ignored)."""


class EpisodeStatus(SQLModel, table=True):
    """An episode's verdict under one settings hash."""

    __tablename__ = "episode_status"
    settings_hash: str = Field(primary_key=True)
    episode_id: str = Field(primary_key=True)
    status: str
    """kept | dropped."""
    reasons_json: str = "[]"
    """List of {code, evidence, call_id}."""
    reward: float | None = None
    advantage: float | None = None
    n_segments: int = 0
    paths_json: str = "[]"
    settings_json: str = "{}"
    computed_at: datetime = Field(default_factory=utcnow)
