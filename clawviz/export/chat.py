"""Internal-shape messages and request tools in OpenAI chat format (what SFT trainers read).

The internal shape (`clawviz.types`) is Anthropic-like: one message holds blocks. OpenAI chat
keeps one message per role turn and one `tool` message per tool result, so a user message with
three tool results becomes three `tool` messages. Assistant text blocks are joined into
`content`, thinking into `reasoning_content` (the field vLLM and the Qwen/DeepSeek chat templates
use), tool_use blocks into `tool_calls` with JSON `arguments`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from clawviz.types import Message


@dataclass
class Converted:
    """OpenAI chat messages of one internal message, and what could not be carried."""

    messages: list[dict[str, Any]]
    omitted: dict[str, int] = field(default_factory=dict)
    """Block kinds dropped (image, document, redacted_thinking, ...) with their counts."""


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value if value is not None else {}).decode()


def _omit(omitted: dict[str, int], kind: str) -> None:
    omitted[kind] = omitted.get(kind, 0) + 1


def _blocks(message: Message) -> list[dict[str, Any]]:
    content = message.get("content")
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]


def assistant_message(message: Message) -> Converted:
    """One assistant message: `content` text, `reasoning_content`, `tool_calls`."""
    omitted: dict[str, int] = {}
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for b in _blocks(message):
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text", "")))
        elif kind == "thinking":
            thinking.append(str(b.get("thinking", "")))
        elif kind == "tool_use":
            calls.append(
                {
                    "id": str(b.get("id") or f"call_{len(calls)}"),
                    "type": "function",
                    "function": {
                        "name": str(b.get("name")),
                        "arguments": _arguments(b.get("input")),
                    },
                }
            )
        else:
            _omit(omitted, str(kind))
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if thinking:
        out["reasoning_content"] = "".join(thinking)
    if calls:
        out["tool_calls"] = calls
    return Converted([out], omitted)


def tool_call_ids(message: Message) -> list[str]:
    """The ids `assistant_message` gives this message's tool calls, in order, without
    converting the rest of it (SFT takes only these from a reply's copy in the history)."""
    ids: list[str] = []
    for b in _blocks(message):
        if b.get("type") == "tool_use":
            ids.append(str(b.get("id") or f"call_{len(ids)}"))
    return ids


def history_message(message: Message) -> Converted:
    """A non-assistant message: text runs become user/system messages, results `tool` ones."""
    role = message.get("role")
    if role == "assistant":
        return assistant_message(message)
    out_role = "system" if role in ("system", "developer") else "user"
    omitted: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            out.append({"role": out_role, "content": "".join(texts)})
            texts.clear()

    for b in _blocks(message):
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text", "")))
        elif kind == "tool_result":
            flush()
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": str(b.get("tool_use_id")),
                    "content": str(b.get("content") or ""),
                }
            )
        else:
            _omit(omitted, str(kind))
    flush()
    return Converted(out, omitted)


def openai_tools(raw_tools: Any) -> list[dict[str, Any]]:
    """Request tools as OpenAI function tools, whatever API the request used.

    Chat Completions tools pass through; Anthropic `{name, description, input_schema}` and
    Responses `{type: function, name, parameters}` become `{type: function, function: {...}}`;
    a server tool without a schema (e.g. Anthropic `web_search_20250305`) keeps its name with
    empty parameters.
    """
    if not isinstance(raw_tools, list):
        return []
    out: list[dict[str, Any]] = []
    for t in raw_tools:
        if not isinstance(t, dict):
            continue
        if isinstance(t.get("function"), dict):
            fn = t["function"]
        else:
            fn = {
                "name": t.get("name") or t.get("type"),
                "description": t.get("description", ""),
                "parameters": t.get("input_schema") or t.get("parameters") or {},
            }
        fn = {k: v for k, v in fn.items() if k != "cache_control"}
        out.append({"type": "function", "function": fn})
    return out
