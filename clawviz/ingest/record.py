"""The typed record model: every field of a parsed call checked for type and range at parse time.

A log line is untrusted. Before a `Call` reaches the store or the analysis it must hold, field by
field, what the store can bind and the analysis can use: identifiers and labels are strings,
counts are non-negative integers below 2^63 (SQLite's INTEGER), times and log-probabilities are
finite floats, tool names are strings. A line that does not is rejected with a reason naming the
field, e.g. ``invalid field 'usage.input_tokens': Input should be a valid integer (got list)``.

pydantic (already a dependency of sqlmodel) does the scalar fields in one compiled validator;
message blocks are checked by hand, once per distinct message (the exchange parser's cache).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clawviz.types import Call, Message


class FormatError(ValueError):
    """A record that cannot be loaded; the message is the one-line reason shown to the user."""


INT64_MIN, INT64_END = -(2**63), 2**63
Int64 = Annotated[int, Field(ge=INT64_MIN, lt=INT64_END)]
Count = Annotated[int, Field(ge=0, lt=INT64_END)]
Finite = Annotated[float, Field(allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class UsageFields(_Strict):
    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cache_read_input_tokens: Count | None = None
    cache_creation_input_tokens: Count | None = None


class RolloutFields(_Strict):
    prompt_token_ids: list[Int64] | None = None
    output_token_ids: list[Int64] | None = None
    output_logprobs: list[Finite | None] | None = None
    trainer_logprobs: list[Finite | None] | None = None
    values: list[Finite | None] | None = None
    policy_version: Int64 | None = None
    output_tokens: list[str] | None = None


class CallFields(_Strict):
    """The scalar fields of a `Call` as the store binds them."""

    call_id: str
    source_file: str
    line: Count
    method: str
    url: str
    episode_id: str
    seq: Int64 | None = None
    t_request: Finite | None = None
    t_response: Finite | None = None
    http_status: Int64 | None = None
    task_id: str | None = None
    harness: str | None = None
    attempt: Int64 | None = None
    model: str | None = None
    model_role: str | None = None
    turn_type: str | None = None
    session_id: str | None = None
    stop_reason: str | None = None
    error: str | None = None
    delivered: bool | None = None
    tools: list[str]
    headers: dict[str, str]
    usage: UsageFields
    rollout: RolloutFields | None = None


_FIELDS = tuple(n for n in CallFields.model_fields if n not in ("usage", "rollout"))


def _describe(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err["loc"])
    got = type(err.get("input")).__name__
    return f"invalid field '{loc}': {err['msg']} (got {got})"


def _is_count(v: Any) -> bool:
    return type(v) is int and 0 <= v < INT64_END


def _is_opt_int64(v: Any) -> bool:
    return v is None or (type(v) is int and INT64_MIN <= v < INT64_END)


def _is_opt_finite(v: Any) -> bool:
    return v is None or (type(v) is float and math.isfinite(v))


def _plainly_valid(call: Call) -> bool:
    """True when every scalar field has exactly the plain type `CallFields` wants (a strict
    subset of what it accepts), so the compiled validator can be skipped: the usual call. Any
    other value, and every rollout, goes through the validator, which names the bad field."""
    if call.rollout is not None:
        return False
    for v in (call.call_id, call.source_file, call.method, call.url, call.episode_id):
        if type(v) is not str:
            return False
    for v in (
        call.task_id,
        call.harness,
        call.model,
        call.model_role,
        call.turn_type,
        call.session_id,
        call.stop_reason,
        call.error,
    ):
        if v is not None and type(v) is not str:
            return False
    u = call.usage
    if not (
        _is_count(call.line)
        and _is_opt_int64(call.seq)
        and _is_opt_int64(call.http_status)
        and _is_opt_int64(call.attempt)
        and _is_opt_finite(call.t_request)
        and _is_opt_finite(call.t_response)
        and (call.delivered is None or type(call.delivered) is bool)
        and all(v is None or _is_count(v) for v in vars(u).values())
        and type(call.tools) is list
        and all(type(t) is str for t in call.tools)
        and type(call.headers) is dict
    ):
        return False
    return all(type(k) is str and type(v) is str for k, v in call.headers.items())


def validate_call(call: Call, *, messages: bool = False) -> None:
    """Raise FormatError naming the first field of `call` that the store or analysis cannot use.

    `messages=True` also checks every message block (the exchange parser checks them as it
    converts each distinct message, so it leaves this off).
    """
    if not _plainly_valid(call):
        data: dict[str, Any] = {n: getattr(call, n) for n in _FIELDS}
        data["usage"] = vars(call.usage)
        data["rollout"] = vars(call.rollout) if call.rollout is not None else None
        try:
            CallFields.model_validate(data)
        except ValidationError as exc:
            raise FormatError(_describe(exc)) from None
    if messages:
        for i, m in enumerate(call.messages):
            check_message(m, f"messages[{i}]")
    if call.response is not None:
        check_message(call.response, "response")


_TEXT_FIELDS = {
    "text": ("text",),
    "thinking": ("thinking",),
    "tool_use": ("id", "name"),
    "tool_result": ("tool_use_id", "content"),
}
_REQUIRED = {"text": ("text",), "thinking": ("thinking",), "tool_result": ("content",)}


def check_message(msg: Any, where: str) -> None:
    """Raise FormatError when an internal-shape message holds a block of the wrong shape."""
    if not isinstance(msg, dict):
        raise FormatError(f"{where} is a {type(msg).__name__}, not a message object")
    role = msg.get("role")
    if role is not None and not isinstance(role, str):
        raise FormatError(f"{where}.role is a {type(role).__name__}, not a string")
    content = msg.get("content")
    if not isinstance(content, list):
        raise FormatError(f"{where}.content is a {type(content).__name__}, not a list of blocks")
    for j, block in enumerate(content):
        if not isinstance(block, dict):
            raise FormatError(f"{where}.content[{j}] is a {type(block).__name__}, not a block")
        kind = block.get("type")
        if not isinstance(kind, str):
            raise FormatError(f"{where}.content[{j}].type is a {type(kind).__name__}")
        for name in _TEXT_FIELDS.get(kind, ()):
            value = block.get(name)
            if value is None and name not in _REQUIRED.get(kind, ()):
                continue
            if not isinstance(value, str):
                raise FormatError(
                    f"{kind} block {name!r} is a {type(value).__name__}, not a string "
                    f"({where}.content[{j}])"
                )
        if kind == "tool_result" and not isinstance(block.get("is_error", False), bool):
            raise FormatError(f"tool_result block 'is_error' is not a boolean ({where})")


def checked_message(msg: Message, where: str = "message") -> Message:
    check_message(msg, where)
    return msg
