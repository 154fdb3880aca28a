"""Store tables (SQLModel). Every schema change adds a revision in clawviz/store/migrations/."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import BigInteger, LargeBinary, String, TypeDecorator, UniqueConstraint
from sqlalchemy.engine import Dialect
from sqlmodel import AutoString, Field, SQLModel
from sqlmodel.main import SQLModelConfig

from clawviz.store.packing import compress
from clawviz.types import CALL_ORDER


def utcnow() -> datetime:
    return datetime.now(UTC)


DEFERRED = SQLModelConfig(defer_build=True)
"""Every table's pydantic config: validator and serializer built on first use (a `model_dump`),
not at import, so importing the store skips 16 schemas it mostly never uses (~30 ms)."""


# --- Text PostgreSQL cannot hold --------------------------------------------------------------
NUL_PREFIX = "\ufdd0nul:"
"""Marks a stored text that held NUL bytes (U+FDD0 is a Unicode noncharacter, never in logs)."""


class NulSafeString(TypeDecorator):
    """A string column that round-trips NUL bytes on PostgreSQL (whose text cannot hold them).

    On PostgreSQL a text containing NUL is stored as `NUL_PREFIX` plus its JSON encoding and
    restored on read; other backends store NUL as is. A text that itself starts with the prefix
    is encoded the same way on every backend, so reading never mistakes it."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if isinstance(value, str) and (
            value.startswith(NUL_PREFIX) or ("\x00" in value and dialect.name == "postgresql")
        ):
            return NUL_PREFIX + json.dumps(value)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return restore_nul(value)


def restore_nul(value: Any) -> Any:
    """A text read by raw SQL, with NUL bytes restored (see NulSafeString)."""
    if isinstance(value, str) and value.startswith(NUL_PREFIX):
        return json.loads(value[len(NUL_PREFIX) :])
    return value


def reason_codes(reasons_json: str | None) -> list[str]:
    """The reason codes of an EpisodeStatus.reasons_json value, in order, without duplicates
    (the Runs table's `reasons` column and its kept counts, `runstats`, read them the same way);
    a value that is not a JSON list gives none."""
    if not reasons_json:
        return []
    try:
        items = orjson.loads(reasons_json)
    except orjson.JSONDecodeError:
        return []
    codes: list[str] = []
    for item in items if isinstance(items, list) else []:
        code = item.get("code") if isinstance(item, dict) else str(item)
        if code and code not in codes:
            codes.append(str(code))
    return codes


class PackedText(TypeDecorator):
    """A large text column that clawviz.store.calls may store compressed (a zstd frame).

    SQLite takes bytes in a text column, so there a value is a str (plain) or bytes (a zstd or,
    in older stores, zlib stream), and NUL is stored as is. On PostgreSQL the column is bytea
    (migration 0007) and every value is a zstd frame: bytes are bound as they are, a str is
    compressed here, and reads return the frame (`calls.unpack_text` and friends undo it). A
    bytea holds NUL, so no escaping is needed there; the one exception is the empty raw form of
    a packed message row (b"")."""

    impl = String
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(LargeBinary())
        return dialect.type_descriptor(NulSafeString())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if dialect.name != "postgresql":
            return NulSafeString().process_bind_param(value, dialect)
        if isinstance(value, str):
            return compress(value.encode())
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if dialect.name == "postgresql":
            return bytes(value) if isinstance(value, memoryview) else value
        return restore_nul(value)


class Meta(SQLModel, table=True):
    """Key/value facts about the store itself (schema_version)."""

    model_config = DEFERRED

    key: str = Field(primary_key=True)
    value: str


class Source(SQLModel, table=True):
    """One ingested file."""

    model_config = DEFERRED

    id: int | None = Field(default=None, primary_key=True)
    path: str = Field(index=True)
    """Path as given (relative to the ingest root where possible)."""
    sha256: str = Field(index=True, unique=True)
    """Content hash: re-ingesting the same bytes adds nothing. `xxh3-128:<hex>` of the whole
    file (stores written before xxh3 hold a bare sha256 hex, still recognised)."""
    format: str
    """exchange | results | transcript_pi | transcript_claude_code | transcript_codex | unknown."""
    size_bytes: int = Field(default=0, sa_type=BigInteger)
    n_lines: int = Field(default=0, sa_type=BigInteger)
    n_calls: int = Field(default=0, sa_type=BigInteger)
    n_episodes: int = Field(default=0, sa_type=BigInteger)
    n_rejected: int = Field(default=0, sa_type=BigInteger)
    ingested_at: datetime = Field(default_factory=utcnow)


class Blob(SQLModel, table=True):
    """Content-addressed text (system prompts, tool lists, request envelopes), stored once."""

    model_config = DEFERRED

    hash: str = Field(primary_key=True)
    text: str = Field(sa_type=PackedText)
    """JSON text, stored packed (`PackedText`)."""


class MessageRow(SQLModel, table=True):
    """A distinct message, keyed by the hash of its canonical form, stored once."""

    model_config = DEFERRED

    __tablename__ = "message"
    hash: str = Field(primary_key=True)
    role: str
    canonical_json: str = Field(sa_type=PackedText)
    """The internal-shape message (clawviz.types) used for matching and display (packed with
    the raw form, see clawviz.store.calls)."""
    raw_json: str = Field(sa_type=PackedText)
    """The message exactly as the first request that carried it sent it."""
    size_bytes: int = Field(default=0, sa_type=BigInteger)


class Episode(SQLModel, table=True):
    """One attempt of one task in one harness."""

    model_config = DEFERRED

    episode_id: str = Field(primary_key=True)
    task_id: str | None = Field(default=None, index=True)
    harness: str | None = Field(default=None, index=True)
    model: str | None = None
    model_role: str | None = None
    attempt: int | None = Field(default=None, sa_type=BigInteger)
    n_calls: int = Field(default=0, sa_type=BigInteger)
    source_kind: str = "exchange"
    """exchange | transcript."""
    first_ts: float | None = None
    last_ts: float | None = None
    primary_episode: str | None = None
    """For a transcript of a session whose wire log is loaded too: the wire's episode (the
    primary record; `jobs.sessions`). Exports skip such episodes."""
    cross_check: str | None = None
    """On a wire episode with a linked transcript: JSON of the comparison (`jobs.sessions`)."""


class CallRow(SQLModel, table=True):
    """One recorded call. Messages are referenced by hash; the response is stored inline."""

    model_config = DEFERRED

    __tablename__ = "call"
    call_id: str = Field(primary_key=True)
    episode_id: str | None = Field(default=None, index=True)
    source_id: int | None = Field(default=None, foreign_key="source.id", index=True)
    source_file: str
    line: int = Field(sa_type=BigInteger)
    seq: int | None = Field(default=None, sa_type=BigInteger)
    endpoint: str
    method: str = "POST"
    url: str = ""
    http_status: int | None = Field(default=None, sa_type=BigInteger)
    t_request: float | None = None
    t_response: float | None = None
    model: str | None = None
    model_role: str | None = None
    turn_type: str | None = None
    session_id: str | None = None
    task_id: str | None = None
    harness: str | None = None
    attempt: int | None = Field(default=None, sa_type=BigInteger)
    stop_reason: str | None = None
    input_tokens: int | None = Field(default=None, sa_type=BigInteger)
    output_tokens: int | None = Field(default=None, sa_type=BigInteger)
    cache_read_input_tokens: int | None = Field(default=None, sa_type=BigInteger)
    cache_creation_input_tokens: int | None = Field(default=None, sa_type=BigInteger)
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
    message_hashes: str = Field(default="[]", sa_type=PackedText)
    """JSON list of MessageRow hashes, in request order."""
    response_json: str | None = None
    """Internal-shape assistant message rebuilt from the response."""
    raw_response: str | None = Field(default=None, sa_type=PackedText)
    """Response body (JSON text or SSE text) as logged."""
    headers_json: str = "{}"
    rollout_json: str | None = None
    extra_json: str = "{}"


class RejectedLine(SQLModel, table=True):
    """A line that could not be loaded, kept verbatim with file, line and reason."""

    model_config = DEFERRED

    __tablename__ = "rejected_line"
    id: int | None = Field(default=None, primary_key=True)
    source_id: int | None = Field(default=None, foreign_key="source.id", index=True)
    source_file: str
    line: int = Field(sa_type=BigInteger)
    reason: str
    raw: str


class Task(SQLModel, table=True):
    """A benchmark task (ClawGym folder or PinchBench markdown)."""

    model_config = DEFERRED

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

    model_config = DEFERRED

    id: int | None = Field(default=None, primary_key=True)
    episode_id: str = Field(index=True, unique=True)
    task_id: str | None = Field(default=None, index=True)
    harness: str | None = None
    model: str | None = None
    model_role: str | None = None
    attempt: int | None = Field(default=None, sa_type=BigInteger)
    reward: float | None = None
    checks_json: str = "{}"
    rubric_json: str = "{}"
    workspace_before: str | None = None
    """Absolute path of a folder or archive."""
    workspace_after: str | None = None
    source_id: int | None = Field(default=None, foreign_key="source.id")


class Review(SQLModel, table=True):
    """One sign-off decision; append-only. The latest per task is the task's status."""

    model_config = DEFERRED

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    decision: str
    """accept | revise | reject."""
    reviewer: str
    note: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    valid_findings_json: str = "[]"
    """Ids of the findings the reviewer had judged valid when deciding."""


class DecisionRow(SQLModel, table=True):
    """A call's decision under one settings hash."""

    model_config = DEFERRED

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
    segment: int | None = Field(default=None, sa_type=BigInteger)
    thread: str = ""
    linked_call: str | None = None
    depth: int = Field(default=0, sa_type=BigInteger)
    match_ignored: str = "[]"
    """JSON list of what tree matching ignored in the request (CallDecision.match_ignored)."""


class EpisodeStatus(SQLModel, table=True):
    """An episode's verdict under one settings hash."""

    model_config = DEFERRED

    __tablename__ = "episode_status"
    settings_hash: str = Field(primary_key=True)
    episode_id: str = Field(primary_key=True)
    status: str
    """kept | dropped."""
    reasons_json: str = "[]"
    """List of {code, evidence, call_id}."""
    reward: float | None = None
    advantage: float | None = None
    n_segments: int = Field(default=0, sa_type=BigInteger)
    paths_json: str = "[]"
    settings_json: str = "{}"
    computed_at: datetime = Field(default_factory=utcnow)


class SearchDoc(SQLModel, table=True):
    """A document of the full-text index (clawviz.store.search): a distinct request message
    (kind 'message', key = its hash, call_id = the call that first sent it) or a call's reply
    (kind 'call', key = call_id)."""

    model_config = DEFERRED

    __tablename__ = "search_doc"
    __table_args__ = (UniqueConstraint("kind", "key"),)
    id: int | None = Field(default=None, primary_key=True)
    kind: str
    key: str
    call_id: str = Field(index=True)
    episode_id: str | None = Field(default=None, index=True)
    role: str
    text: str


class DiagnosisRun(SQLModel, table=True):
    """One LLM diagnosis of a task (clawviz.review.diagnosis), or one imported findings batch."""

    model_config = DEFERRED

    __tablename__ = "diagnosis_run"
    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    model: str
    prompt_hash: str = ""
    prompt_version: str = ""
    source: str = "llm"
    """llm (diagnosed here) | import:<file> (a findings JSONL made elsewhere)."""
    input_tokens: int | None = Field(default=None, sa_type=BigInteger)
    output_tokens: int | None = Field(default=None, sa_type=BigInteger)
    seconds: float | None = None
    n_findings: int = Field(default=0, sa_type=BigInteger)
    error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class Finding(SQLModel, table=True):
    """One problem a diagnosis reported, and the reviewer's judgement of it."""

    model_config = DEFERRED

    id: int | None = Field(default=None, primary_key=True)
    run_id: int | None = Field(default=None, foreign_key="diagnosis_run.id", index=True)
    task_id: str = Field(index=True)
    area: str
    """instruction | inputs | checker | rubric."""
    severity: str
    """high | medium | low."""
    problem: str
    suggestion: str = ""
    model: str = ""
    prompt_hash: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    verdict: str | None = None
    """None (open) | valid | not_valid."""
    verdict_note: str = ""
    verdict_by: str | None = None
    verdict_at: datetime | None = None


class SolvabilityRun(SQLModel, table=True):
    """One run of a task's checker on a reference solution workspace (PIPELINE §7: a task needs
    one reference workspace that scores 1.0)."""

    model_config = DEFERRED

    __tablename__ = "solvability_run"
    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    workspace: str
    """What was checked: the task's own solution folder or archive, or an uploaded file name."""
    status: str
    """The checker's status (ok | failed | timeout | error ...)."""
    reward: float | None = None
    scores_json: str = "{}"
    message: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class CallComment(SQLModel, table=True):
    """A reviewer's note on one call (the Episode explorer's inspector); append-only."""

    model_config = DEFERRED

    __tablename__ = "call_comment"
    id: int | None = Field(default=None, primary_key=True)
    episode_id: str = Field(index=True)
    call_id: str = Field(index=True)
    reviewer: str
    """The trusted proxy header's user when the deployment sets one, else the name typed."""
    text: str
    created_at: datetime = Field(default_factory=utcnow)


# --- the Runs page's maintained aggregates (clawviz.store.runstats; issue 26 §3) ---------------
class RunsMark(SQLModel, table=True):
    """A settings hash whose Runs aggregates (`runs_agg`) are built and kept up to date."""

    __tablename__ = "runs_mark"
    settings_hash: str = Field(primary_key=True)


class RunsAgg(SQLModel, table=True):
    """One count of the Runs first view under a settings hash: episodes (and their calls) per
    kind ('all', 'status', 'reason', 'rewarded', 'bin', 'task', 'harness', 'model', 'group')
    and key; `detail` holds a group's [task, harness]."""

    __tablename__ = "runs_agg"
    settings_hash: str = Field(primary_key=True)
    kind: str = Field(primary_key=True)
    key: str = Field(primary_key=True)
    n: int = Field(default=0, sa_type=BigInteger)
    calls: int = Field(default=0, sa_type=BigInteger)
    detail: str | None = None


class RunsMember(SQLModel, table=True):
    """What one episode adds to `runs_agg` under a settings hash (subtracted when it changes)."""

    __tablename__ = "runs_member"
    settings_hash: str = Field(primary_key=True)
    episode_id: str = Field(primary_key=True)
    keys_json: str = "[]"
    calls: int = Field(default=0, sa_type=BigInteger)


RUNS_ORDER_INDEX = "ix_episode_runs_order"
"""The Runs table's default order (`queries._EPISODE_ORDER_SQL`) over the episodes it lists:
its first page is an index range read."""


LINKED_INDEX = "ix_episode_linked"
LIVE_INDEX = "ix_episode_live"


def _runs_order_index() -> None:
    from sqlalchemy import Index, text

    Index(
        RUNS_ORDER_INDEX,
        text("(task_id IS NULL)"), "task_id", text("(harness IS NULL)"), "harness",
        text("(attempt IS NULL)"), "attempt", "episode_id",
        _table=Episode.__table__,  # type: ignore[attr-defined]
        sqlite_where=text("primary_episode IS NULL"),
        postgresql_where=text("primary_episode IS NULL"),
    )  # fmt: skip
    # The live indicator's reads (`queries.live_state`, every 3 s on Runs): its count and sum
    # scan this small covering index, not the table, and its recent episodes are a range.
    Index(LIVE_INDEX, "last_ts", "n_calls", _table=Episode.__table__)  # type: ignore[attr-defined]
    # The linked transcripts (counted on every Runs view): a read of the few linked ones.
    Index(
        LINKED_INDEX, "primary_episode",
        _table=Episode.__table__,  # type: ignore[attr-defined]
        sqlite_where=text("primary_episode IS NOT NULL"),
        postgresql_where=text("primary_episode IS NOT NULL"),
    )  # fmt: skip


_runs_order_index()


def _nul_safe_strings() -> None:
    """Every string column of the schema is a NulSafeString (one place, not one per field)."""
    for table in SQLModel.metadata.tables.values():
        for column in table.columns:
            if type(column.type) in (String, AutoString):
                column.type = NulSafeString(getattr(column.type, "length", None))


_nul_safe_strings()


def call_order_by(columns: Any) -> list[Any]:
    """`clawviz.types.CALL_ORDER` as SQL ORDER BY terms over a table's columns (`table.c`).

    A missing seq or request time sorts after every known one, as in `call_order_key`.
    """
    out: list[Any] = []
    for name in CALL_ORDER:
        col = columns[name]
        if name in ("seq", "t_request"):
            out.append(col.is_(None))
        out.append(col)
    return out


# --- the change queue of the staleness check (clawviz.store.changes; issue 26) -----------------
class AnalysisMark(SQLModel, table=True):
    """A settings hash whose analysis follows the change queue (`episode_dirty`)."""

    __tablename__ = "analysis_mark"
    settings_hash: str = Field(primary_key=True)
    analysis_version: int = Field(sa_type=BigInteger)


class EpisodeDirty(SQLModel, table=True):
    """An episode changed since its analysis under `settings_hash` (rows added by triggers)."""

    __tablename__ = "episode_dirty"
    settings_hash: str = Field(primary_key=True)
    episode_id: str = Field(primary_key=True)
    seq: int = Field(sa_type=BigInteger, index=True)


class SearchPending(SQLModel, table=True):
    """A call the full-text index has not read yet (added by a trigger on call inserts)."""

    __tablename__ = "search_pending"
    call_id: str = Field(primary_key=True)


class AttemptsChange(SQLModel, table=True):
    """The attempts revision's counter (`clawviz.store.changes.ATTEMPTS`, bumped by triggers):
    one row on SQLite, one per writing transaction on PostgreSQL."""

    __tablename__ = "attempts_change"
    id: int = Field(primary_key=True, sa_type=BigInteger, sa_column_kwargs={"autoincrement": False})
    n: int = Field(default=0, sa_type=BigInteger)


def _create_change_triggers(target: Any, connection: Any, **_kw: Any) -> None:
    from sqlalchemy import text

    from clawviz.store.changes import trigger_ddl

    for sql in trigger_ddl(connection.dialect.name):
        connection.execute(text(sql))


def _listen_change_triggers() -> None:
    from sqlalchemy import event

    event.listen(SQLModel.metadata, "after_create", _create_change_triggers)


_listen_change_triggers()
