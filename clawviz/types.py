"""Plain data shapes shared by ingest, reconstruction, the store and the app.

Messages are plain dicts in one internal shape (Anthropic-like), whatever the wire format was:
``{"role": "system"|"user"|"assistant"|"tool", "content": [block, ...]}`` where a block is one of
``{"type": "text", "text": str}``,
``{"type": "image"}`` (payload dropped from the canonical form, kept in raw),
``{"type": "tool_use", "id": str, "name": str, "input": Any}``,
``{"type": "tool_result", "tool_use_id": str, "content": str, "is_error": bool}``,
``{"type": "thinking", "thinking": str}``, ``{"type": "redacted_thinking"}``.
OpenAI ``tool`` messages become a ``user`` message holding one ``tool_result`` block; assistant
``tool_calls`` become ``tool_use`` blocks; ``reasoning_content`` becomes a ``thinking`` block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

import orjson

Message = dict[str, Any]

Endpoint = Literal["anthropic_messages", "openai_chat", "openai_responses", "non_model"]
Failure = Literal["failed_http", "truncated_stream", "orphaned_request"]


class State(StrEnum):
    """The one state each call ends in (PIPELINE §4)."""

    KEPT = "kept"
    PRUNED = "pruned"
    AUXILIARY = "auxiliary"
    FAILED = "failed"


class Role(StrEnum):
    """What a call is for (PIPELINE §3): the main conversation or one auxiliary kind."""

    MAIN = "main"
    AUX_UTILITY = "aux_utility"
    AUX_SUMMARY = "aux_summary"
    AUX_SUBAGENT = "aux_subagent"
    AUX_HEARTBEAT = "aux_heartbeat"
    AUX_CRON = "aux_cron"
    AUX_MEMORY_FLUSH = "aux_memory_flush"
    AUX_NON_MODEL = "aux_non_model"


class ReasonCode(StrEnum):
    """Why a call is pruned or failed, or why an episode is dropped (PIPELINE §4).

    Values are the strings stored in the database and shown in the app, so a member compares
    equal to its bare string (``ReasonCode.NOT_LONGEST == "not_longest"``).
    """

    # Call reasons: pruned(...)
    SUPERSEDED_RETRY = "superseded_retry"
    NOT_LONGEST = "not_longest"
    # Call reasons: failed(...) (the Failure codes)
    FAILED_HTTP = "failed_http"
    TRUNCATED_STREAM = "truncated_stream"
    ORPHANED_REQUEST = "orphaned_request"
    # Episode reasons
    TOO_MANY_BRANCHES = "too_many_branches"
    ENDED_IN_ERROR = "ended_in_error"
    UNSUPPORTED_TOOL = "unsupported_tool"
    MISSING_REWARD = "missing_reward"
    BELOW_REWARD_THRESHOLD = "below_reward_threshold"


SourceKind = Literal["exchange", "transcript"]


@dataclass
class Usage:
    """Token counts of one response (None when the log does not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


@dataclass
class Rollout:
    """Token-level data logged by an RL-aware server (vLLM / SGLang / clawviz recorder)."""

    prompt_token_ids: list[int] | None = None
    output_token_ids: list[int] | None = None
    output_logprobs: list[float] | None = None
    trainer_logprobs: list[float] | None = None
    values: list[float] | None = None
    policy_version: int | None = None
    output_tokens: list[str] | None = None
    """Text of each generated token when the server logged it (OpenAI / vLLM
    `logprobs.content[].token` unless it is a `token_id:N`, SGLang's third triple item)."""


@dataclass
class Call:
    """One recorded model call (one exchange-log line or one replayed transcript turn)."""

    call_id: str
    source_file: str
    line: int
    endpoint: Endpoint
    method: str = "POST"
    url: str = ""
    seq: int | None = None
    t_request: float | None = None
    t_response: float | None = None
    http_status: int | None = None
    episode_id: str | None = None
    task_id: str | None = None
    harness: str | None = None
    attempt: int | None = None
    model: str | None = None
    model_role: str | None = None
    turn_type: str | None = None
    """Ground truth from X-Turn-Type / ClawGym model prefix / clawviz.role, if any."""
    session_id: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    system: str = ""
    tools: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    response: Message | None = None
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    failure: Failure | None = None
    error: str | None = None
    delivered: bool | None = None
    rollout: Rollout | None = None
    source_kind: SourceKind = "exchange"
    extra: dict[str, Any] = field(default_factory=dict)
    """Format-specific facts (e.g. transcript model_change, thinking level)."""

    @property
    def generated_tokens(self) -> int | None:
        if self.rollout and self.rollout.output_token_ids is not None:
            return len(self.rollout.output_token_ids)
        return self.usage.output_tokens


HIDDEN_MAINTENANCE = "hidden_maintenance"
"""`Call.extra` key a transcript reader sets, with its evidence, when the harness's own record
marks the call's turn as hidden maintenance (PIPELINE §3, rule `hidden_maintenance_turn`)."""


@dataclass
class Reason:
    """A reason code with the evidence that triggered it, e.g. ('too_many_branches', '9 > 8').

    `call_id` is the call that caused it, where the tree pins it (the failed last call, the call
    that used the tool, the leaf that crossed max_leaves, the leaf the reward belongs to);
    `call_ids` every call it concerns (all counted leaves of too_many_branches), `call_id` first.
    """

    code: ReasonCode | str
    evidence: str = ""
    call_id: str | None = None
    call_ids: list[str] = field(default_factory=list)


@dataclass
class CallDecision:
    """What reconstruction decided about one call."""

    call_id: str
    role: Role | str
    state: State | str
    reason: ReasonCode | str | None
    role_reason: str = ""
    parent_call: str | None = None
    retry_of: str | None = None
    segment: int | None = None
    thread: str = ""
    linked_call: str | None = None
    match_ignored: list[dict[str, Any]] = field(default_factory=list)
    """Parts of the request that tree matching left out or read in their kept form, each
    `{code, index, excerpt, why}` (`recon.matchview`); shown by the call inspector."""
    """Spawning call of a sub-agent, summary call of a continuation, tip summarised by a summary."""
    depth: int = 0


@dataclass
class PathInfo:
    """One root-to-leaf path of a main segment tree."""

    path_id: str
    segment: int
    call_ids: list[str]
    state: State | str
    reason: ReasonCode | str | None
    generated_tokens: int
    reward: float | None = None
    advantage: float | None = None
    ppo_return: float | None = None
    has_values: bool = False
    why: str = ""
    """A pruned path's loss: which path won and by how many generated tokens (or calls)."""


@dataclass
class EpisodeAnalysis:
    """The whole result of reconstruction for one episode under one settings hash."""

    episode_id: str
    settings_hash: str
    status: Literal["kept", "dropped"]
    reasons: list[Reason]
    decisions: dict[str, CallDecision]
    paths: list[PathInfo]
    reward: float | None
    advantage: float | None = None
    n_segments: int = 0


CALL_ORDER = ("seq", "t_request", "source_file", "line", "call_id")
"""The one order of an episode's calls (PIPELINE §2): seq when logged, else request time, then
file position; a missing seq or time sorts after every known one. `call_order_key` is it in
Python, `clawviz.store.models.call_order_by` in SQL."""


class Ordered(Protocol):
    """Anything carrying the fields of `CALL_ORDER` (a Call, a row of call columns)."""

    @property
    def seq(self) -> int | None: ...
    @property
    def t_request(self) -> float | None: ...
    @property
    def source_file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def call_id(self) -> str: ...


def call_order_key(call: Ordered) -> tuple[float, float, str, int, str]:
    """Sort key of `CALL_ORDER`: seq, then request time (missing ones last), file, line, id."""
    return (
        call.seq if call.seq is not None else math.inf,
        call.t_request if call.t_request is not None else math.inf,
        call.source_file,
        call.line,
        call.call_id,
    )


class Lined(Protocol):
    """Anything naming a call's log line (a Call, a CallRow, a search hit, a tree node)."""

    @property
    def line(self) -> int: ...


def call_label(call: Lined) -> str:
    """THE number of a call wherever it is shown: its 1-based line in its log file.

    One number everywhere (node text, picker, hover, captions, paths, evidence, the CLI). The log
    line, not `seq`: every call has one (transcripts and proxies without seq too), it is the
    number `sed -n 12p FILE` opens, and `seq` is 0-based in the recorder and 1-based in other
    logs, so it would show a second number next to the file position (docs/DECISIONS.md).
    """
    return str(call.line)


def format_value(value: float, against: float | None = None) -> str:
    """A reward or score for evidence text: 2 decimals (0.466667 -> 0.47), more when rounding
    would make it equal `against` (0.4999 against 0.5 -> 0.4999), no trailing zeros."""
    for digits in range(2, 7):
        text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
        if against is None or (float(text) == value) or float(text) != against:
            break
    return "0" if text in ("-0", "") else text


@dataclass
class ParsedExchange:
    """One parsed exchange: the normalised call plus the raw request pieces kept for display."""

    call: Call
    raw_messages: list[Any] = field(default_factory=list)
    """Wire messages, aligned with `call.messages` (a list of items for a Responses group)."""
    message_hashes: list[str] = field(default_factory=list)
    raw_wire: list[bytes | None] | None = None
    """The JSON bytes of each raw message where the parser made them (None: not made), so the
    store writes a new message without serialising it again."""
    system_raw: Any = None
    tools_raw: list[Any] = field(default_factory=list)
    envelope: dict[str, Any] = field(default_factory=dict)
    """The request body without messages/input, system/instructions and tools."""
    raw_response: str | None = None
    has_identity: bool = False
    """The record names its own episode (not the per-file fallback)."""
    unknown_endpoint: bool = False


def system_text(raw: Any) -> str:
    """Joined text of a raw system field: string, text blocks, or lifted system messages."""
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw
    parts: list[str] = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict):
                if "role" in item:
                    parts.append(text_of(item.get("content")))
                elif item.get("type") in ("text", "input_text") or "text" in item:
                    parts.append(str(item.get("text", "")))
    return "\n\n".join(p for p in parts if p)


def text_of(content: Any) -> str:
    """Plain text of a content value (string or list of text-like parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict):
                if "text" in part:
                    out.append(str(part["text"]))
                elif part.get("type") in ("image", "image_url", "input_image"):
                    out.append("[image]")
        return "".join(out)
    return orjson.dumps(content).decode()
