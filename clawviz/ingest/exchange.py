"""Exchange-log records (FORMATS §1-2) parsed into `Call`s with internal-shape messages.

One function, `parse_exchange`, reads one decoded JSONL record. It never touches the store; it
raises `FormatError` (a one-line reason) for a record that is no exchange or whose body cannot be
read, and returns a `ParsedExchange` (the `Call` plus the raw pieces the store keeps for display).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_plus, urlsplit

import orjson
from xxhash import xxh3_64_intdigest

from clawviz.ingest import identity, sse
from clawviz.ingest.record import FormatError, check_message, validate_call
from clawviz.recon import dumps_canonical, normalize_blocks, strip_cache_control
from clawviz.types import Call, Endpoint, Message, ParsedExchange, Rollout, Usage, system_text
from clawviz.types import text_of as _text_of

REDACTED_HEADERS = frozenset(
    {"authorization", "x-api-key", "cookie", "set-cookie", "proxy-authorization", "api-key"}
)
# Any header whose name says one of these is a credential (x-goog-api-key, X-Auth-Token,
# X-Amz-Security-Token, OpenAI-Api-Key, ...), except the rate-limit counters of token budgets.
_SECRET_WORDS = ("key", "token", "secret", "auth", "password", "passwd", "cookie", "credential")
_SECRET_QUERY_WORDS = (*_SECRET_WORDS, "signature")
_SECRET_QUERY_NAMES = frozenset({"sig", "pwd", "pass", "code"})
REDACTED = "[redacted]"


def is_secret_header(name: str) -> bool:
    low = name.lower()
    if "ratelimit" in low:
        # x-ratelimit-remaining-tokens is a count of token budget, not a credential; any other
        # secret word in a rate-limit header (X-RateLimit-Auth) still is one.
        low = re.sub(r"tokens?", "", low)
        return any(w in low for w in _SECRET_WORDS)
    return low in REDACTED_HEADERS or any(w in low for w in _SECRET_WORDS)


def is_secret_query_param(name: str) -> bool:
    low = unquote_plus(name).lower()
    return low in _SECRET_QUERY_NAMES or any(w in low for w in _SECRET_QUERY_WORDS)


# The authority's userinfo runs to its LAST "@" (`https://u:p@ss@host/`: a parser takes "ss@host"
# apart from "u:p@" differently, so everything before the last "@" is the secret).
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")
_PARAM_SEPARATORS = re.compile(r"([&;])")


def _redact_params(query: str) -> str:
    """A `name=value` list (either separator, `&` or `;`) with secret values replaced."""
    parts = _PARAM_SEPARATORS.split(query)
    for i in range(0, len(parts), 2):
        name, eq, _value = parts[i].partition("=")
        if eq and is_secret_query_param(name):
            parts[i] = name + eq + REDACTED
    return "".join(parts)


def redact_url(url: str) -> str:
    """`url` with the values of secret query parameters (`?key=`, `api_key`, `access_token`,
    ...; `&` or `;` between them), the same in a `#access_token=...` fragment (OAuth's implicit
    flow), and any `user:password@` replaced; every other byte as it was."""
    url = _USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", url, count=1)
    head, hashmark, fragment = url.partition("#")
    base, q, query = head.partition("?")
    out = base + q + _redact_params(query) if q else head
    return out + hashmark + (_redact_params(fragment) if "=" in fragment else fragment)


SESSION_HEADERS = ("x-session-id", "x-claude-code-session-id", "session_id", "session-id")
_SESSION_HEADER_HARNESS = {
    "x-claude-code-session-id": "claude-code",
    "session_id": "codex",
    "session-id": "codex",
}
"""The harness a session header suggests when no marker (identity.WIRE_MARKERS) names one."""
CLAWGYM_MODEL = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*?)__(.+)$")
# Paths that are known not to be model calls; any other unknown path is also kept as non_model
# but flagged so the ingest report can name it.
KNOWN_NON_MODEL = ("/models", "/count_tokens", "/embeddings", "/health", "/v1/models")
_BEDROCK = re.compile(r"/model/[^/]+/invoke")
REQUEST_ONLY_KEYS = ("messages", "input", "system", "instructions", "tools")
_KNOWN_CLAWVIZ = frozenset(
    ("episode_id", "task_id", "harness", "attempt", "seq", "delivered", "model_role", "rollout")
    + ("role",)
)


@dataclass
class _Converted:
    """One request's raw messages with their internal forms and hashes."""

    tag: bytes
    raws: list[Any]
    messages: list[Message]
    hashes: list[str]


class MessageCache:
    """Internal-shape conversions of raw messages, found by their wire bytes (with the tag).

    The dict key is a fast xxh3 digest of the bytes; a hit counts only when the stored bytes
    are equal too, so a digest collision costs a conversion, never a wrong message.

    Every call re-sends the whole history, so converting and hashing only the new messages is
    what keeps ingest near the cost of JSON decoding.
    """

    def __init__(self, max_bytes: int = 24 * 1024 * 1024, n_recent: int = 16) -> None:
        self.max_bytes = max_bytes
        self._bytes = 0
        self._entries: dict[tuple[bytes, int], tuple[bytes, Message, str]] = {}
        self.n_recent = n_recent
        self.recent: list[_Converted] = []
        """The last requests' conversions: a new request usually extends one of them."""

    def longest_prefix(self, tag: bytes, raws: list[Any]) -> tuple[_Converted | None, int]:
        """The recent conversion sharing the longest raw-message prefix with `raws`."""
        best: _Converted | None = None
        best_n = 0
        if not raws:
            return best, best_n
        # Newest first, and stop at a request this one extends whole: the usual case is the
        # previous turn of the same conversation, and each comparison walks the history.
        for conv in reversed(self.recent):
            if conv.tag != tag or not conv.raws or len(conv.raws) <= best_n:
                continue
            if conv.raws[0] != raws[0]:
                continue
            n, limit = 1, min(len(conv.raws), len(raws))
            while n < limit and conv.raws[n] == raws[n]:
                n += 1
            if n > best_n:
                best, best_n = conv, n
            if n == len(conv.raws):
                break
        return best, best_n

    def remember(self, conv: _Converted) -> None:
        self.recent.append(conv)
        if len(self.recent) > self.n_recent:
            self.recent.pop(0)

    def get(self, tag: bytes, wire: bytes) -> tuple[Message, str] | None:
        entry = self._entries.get((tag, xxh3_64_intdigest(wire)))
        if entry is None or entry[0] != wire:
            return None
        return entry[1], entry[2]

    def put(self, tag: bytes, wire: bytes, value: tuple[Message, str]) -> None:
        if self._bytes + len(wire) > self.max_bytes:
            # Bounded memory: a fresh cache only costs re-conversion of the next few histories.
            self._entries.clear()
            self._bytes = 0
        # A right-sized copy: orjson.dumps returns bytes that keep its whole working buffer
        # (~32 KB for a 2.5 KB message), so holding its output would make `max_bytes` a tenth
        # of the real cost (peak RSS of the 1 GB bench log: 250 -> 470 MB).
        self._entries[(tag, xxh3_64_intdigest(wire))] = (bytes(memoryview(wire)), *value)
        self._bytes += len(wire)


@lru_cache(maxsize=1024)
def endpoint_of(method: str, url: str) -> tuple[Endpoint, bool]:
    """The endpoint of a request and whether its path is unknown (kept as non_model)."""
    path = urlsplit(url).path.rstrip("/")
    if method.upper() != "POST":
        return "non_model", False
    if path.endswith("/count_tokens"):
        return "non_model", False
    if path.endswith("/messages") or ("/model/" in path and _BEDROCK.search(path)):
        return "anthropic_messages", False
    if path.endswith("/chat/completions"):
        return "openai_chat", False
    if path.endswith("/responses"):
        return "openai_responses", False
    if any(path.endswith(p) for p in KNOWN_NON_MODEL) or path.endswith("/generate"):
        return "non_model", False
    return "non_model", True


def redact_headers(headers: Any) -> dict[str, str]:
    """Headers as str->str with secret values replaced (never stored unredacted)."""
    if not isinstance(headers, dict):
        return {}
    out: dict[str, str] = {}
    for k, v in headers.items():
        value = v if isinstance(v, str) else orjson.dumps(v).decode()
        out[str(k)] = REDACTED if is_secret_header(str(k)) else value
    return out


def _parse_arguments(arguments: Any) -> Any:
    """Tool-call arguments as an object when they are a JSON string, else as given."""
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError:
            return arguments
    return arguments


def _anthropic_block(b: Any) -> dict[str, Any]:
    if isinstance(b, str):
        return {"type": "text", "text": b}
    if not isinstance(b, dict):
        return {"type": "text", "text": orjson.dumps(b).decode()}
    kind = b.get("type")
    if kind == "text":
        return {"type": "text", "text": b.get("text", "")}
    if kind == "image" or kind == "document":
        return {"type": kind}
    if kind == "tool_use":
        return {
            "type": "tool_use",
            "id": b.get("id"),
            "name": b.get("name"),
            "input": b.get("input"),
        }
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": b.get("tool_use_id"),
            "content": _text_of(b.get("content")),
            "is_error": bool(b.get("is_error", False)),
        }
    if kind == "thinking":
        return {"type": "thinking", "thinking": b.get("thinking", "")}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking"}
    return strip_cache_control(b)


def anthropic_message(raw: dict[str, Any]) -> Message:
    """An Anthropic wire message in the internal shape."""
    content = raw.get("content")
    blocks = [_anthropic_block(b) for b in content] if isinstance(content, list) else content
    return {"role": raw.get("role"), "content": normalize_blocks(blocks)}


def openai_message(raw: dict[str, Any]) -> Message:
    """A Chat Completions wire message in the internal shape (tool -> user tool_result)."""
    role = raw.get("role")
    if role in ("tool", "function"):
        return {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": raw.get("tool_call_id") or raw.get("name"),
                    "content": _text_of(raw.get("content")),
                    "is_error": False,
                }
            ],
        }
    blocks: list[dict[str, Any]] = []
    reasoning = raw.get("reasoning_content") or raw.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning})
    content = raw.get("content")
    if isinstance(content, str):
        if content:
            blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("image_url", "input_image", "image"):
                blocks.append({"type": "image"})
            elif isinstance(part, dict):
                blocks.append({"type": "text", "text": str(part.get("text", ""))})
            elif isinstance(part, str):
                blocks.append({"type": "text", "text": part})
    for tc in raw.get("tool_calls") or []:
        fn = tc.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": tc.get("id"),
                "name": fn.get("name"),
                "input": _parse_arguments(fn.get("arguments")),
            }
        )
    out_role = "system" if role in ("system", "developer") else role
    return {"role": out_role, "content": normalize_blocks(blocks)}


_RESPONSES_ASSISTANT_ITEMS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "reasoning",
        "local_shell_call",
        "web_search_call",
        "file_search_call",
        "computer_call",
    }
)


def _responses_item_side(item: Any) -> str:
    """'assistant' for model-produced items, 'tool' for tool outputs, else the message role."""
    if not isinstance(item, dict):
        return "user"
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        raise FormatError(f"Responses item 'type' is a {type(kind).__name__}, not a string")
    if kind in _RESPONSES_ASSISTANT_ITEMS:
        return "assistant"
    if kind.endswith("_output"):
        return "tool"
    role = item.get("role", "user")
    return "system" if role in ("system", "developer") else role


def responses_group_message(items: list[Any]) -> Message:
    """A run of Responses items (one side of the conversation) as one internal message."""
    side = _responses_item_side(items[0])
    blocks: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            blocks.append({"type": "text", "text": str(item)})
            continue
        kind = item.get("type", "message")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, str):
                blocks.append({"type": "text", "text": content})
            else:
                for part in content or []:
                    if isinstance(part, dict) and part.get("type") == "input_image":
                        blocks.append({"type": "image"})
                    elif isinstance(part, dict):
                        blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "reasoning":
            text = "\n".join(
                str(s.get("text", "")) for s in item.get("summary") or [] if isinstance(s, dict)
            )
            blocks.append({"type": "thinking", "thinking": text})
        elif kind in ("function_call", "custom_tool_call"):
            arguments = item.get("arguments", item.get("input"))
            blocks.append(
                {
                    "type": "tool_use",
                    "id": item.get("call_id") or item.get("id"),
                    "name": item.get("name"),
                    "input": _parse_arguments(arguments),
                }
            )
        elif kind.endswith("_output"):
            output = item.get("output")
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": item.get("call_id"),
                    "content": output if isinstance(output, str) else _text_of(output),
                    "is_error": False,
                }
            )
        else:
            blocks.append({"type": kind, **{k: v for k, v in item.items() if k != "type"}})
    role = "user" if side == "tool" else side
    return {"role": role, "content": normalize_blocks(blocks)}


def group_responses_items(items: list[Any]) -> list[list[Any]]:
    """Consecutive model-side items form one assistant turn; each other item is its own turn."""
    groups: list[list[Any]] = []
    for item in items:
        side = _responses_item_side(item)
        if side == "assistant" and groups and _responses_item_side(groups[-1][0]) == "assistant":
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _converted_hash(msg: Message) -> str:
    """`message_hash` of a converter's output, whose content is already normalised.

    normalize_blocks is idempotent, so hashing the content as it is gives the same key without
    a second deep copy of every block.
    """
    canon = {"role": msg.get("role"), "content": msg["content"]}
    return hashlib.sha256(dumps_canonical(canon)).hexdigest()


def _same_but_cache_control(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two Anthropic wire messages whose conversions are equal: the same role and the same
    content but for the blocks' own `cache_control` (which `anthropic_message` drops)."""
    if a.get("role") != b.get("role"):
        return False
    ca, cb = a.get("content"), b.get("content")
    if ca == cb:
        return True
    if type(ca) is not list or type(cb) is not list or len(ca) != len(cb):
        return False
    for x, y in zip(ca, cb, strict=True):
        if x == y:
            continue
        if type(x) is not dict or type(y) is not dict:
            return False
        if {k: v for k, v in x.items() if k != "cache_control"} != {
            k: v for k, v in y.items() if k != "cache_control"
        }:
            return False
    return True


def _extend_past_cache_control(prev: list[Any], raws: list[Any], n: int) -> int:
    """The shared prefix length, counting messages that differ only in block cache_control.

    Claude Code moves its cache breakpoint to the newest message every turn, so the message
    that carried it last turn comes back without it: its conversion and hash are the ones the
    previous request already made."""
    limit = min(len(prev), len(raws))
    while n < limit and (prev[n] == raws[n] or _same_but_cache_control(prev[n], raws[n])):
        n += 1
    return n


def _convert(
    raws: list[Any], convert: Any, cache: MessageCache | None, tag: bytes
) -> tuple[list[Message], list[str], list[bytes | None]]:
    """Convert raw messages through the cache; returns internal messages, their hashes and the
    wire bytes made on the way (None for the messages of a shared history prefix)."""
    messages: list[Message] = []
    hashes: list[str] = []
    wires: list[bytes | None] = []
    if cache is not None:
        # Equal raw dicts compare in C without serialising: reuse the shared history prefix.
        prev, n = cache.longest_prefix(tag, raws)
        if prev is not None and tag == b"a":
            n = _extend_past_cache_control(prev.raws, raws, n)
        if prev is not None:
            messages, hashes = prev.messages[:n], prev.hashes[:n]
            wires = [None] * n
    for raw in raws[len(messages) :]:
        wire = orjson.dumps(raw)
        hit = cache.get(tag, wire) if cache is not None else None
        if hit is None:
            msg = convert(raw)
            # Checked once per distinct message: a cached conversion was checked when made.
            check_message(msg, f"request message {len(messages)}")
            hit = (msg, _converted_hash(msg))
            if cache is not None:
                cache.put(tag, wire, hit)
        messages.append(hit[0])
        hashes.append(hit[1])
        wires.append(wire)
    if cache is not None and raws:
        cache.remember(_Converted(tag, raws, messages, hashes))
    return messages, hashes, wires


@dataclass
class _Request:
    """The parts of a request body that the call and the store need."""

    system_raw: Any
    raw_messages: list[Any]
    messages: list[Message]
    hashes: list[str]
    wires: list[bytes | None]
    tools_raw: list[Any]
    tool_names: list[str]
    envelope: dict[str, Any]


def _tool_names(tools: list[Any]) -> list[str]:
    names = []
    for t in tools:
        if isinstance(t, dict):
            name = t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
            names.append(str(name))
    return names


def _parse_request(endpoint: Endpoint, body: Any, cache: MessageCache | None) -> _Request:
    if endpoint == "non_model":
        envelope = body if isinstance(body, dict) else {"_body": body}
        return _Request(None, [], [], [], [], [], [], envelope)
    if not isinstance(body, dict):
        raise FormatError(f"{endpoint} request body is not a JSON object")
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise FormatError(f"{endpoint} request 'tools' is not a list")
    envelope = {k: v for k, v in body.items() if k not in REQUEST_ONLY_KEYS}
    if endpoint == "anthropic_messages":
        raws = body.get("messages")
        if not isinstance(raws, list) or not all(isinstance(m, dict) for m in raws):
            raise FormatError("anthropic_messages request has no 'messages' list of objects")
        msgs, hashes, wires = _convert(raws, anthropic_message, cache, b"a")
        system_raw = body.get("system")
    elif endpoint == "openai_chat":
        raws = body.get("messages")
        if not isinstance(raws, list) or not all(isinstance(m, dict) for m in raws):
            raise FormatError("openai_chat request has no 'messages' list of objects")
        # Leading system/developer messages play the role of Anthropic's top-level system field
        # (and OpenClaw refreshes them every turn), so they are lifted out of the history.
        n_lead = 0
        while n_lead < len(raws) and raws[n_lead].get("role") in ("system", "developer"):
            n_lead += 1
        system_raw = raws[:n_lead] or None
        raws = raws[n_lead:]
        msgs, hashes, wires = _convert(raws, openai_message, cache, b"o")
    else:
        items = body.get("input")
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        if items is None:
            items = []
        if not isinstance(items, list):
            raise FormatError("openai_responses request 'input' is neither a string nor a list")
        raws = group_responses_items(items)
        msgs, hashes, wires = _convert(raws, responses_group_message, cache, b"r")
        system_raw = body.get("instructions")
    return _Request(system_raw, raws, msgs, hashes, wires, tools, _tool_names(tools), envelope)


@dataclass
class _Response:
    """A response read into the internal shape."""

    message: Message | None = None
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    rollout: Rollout | None = None
    failure: str | None = None
    error: str | None = None


def _error_text(body: Any, raw: str | None) -> str:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("type") or orjson.dumps(err).decode())[:300]
        return str(err)[:300]
    return (raw or "").strip().replace("\n", " ")[:300]


def _parse_response(endpoint: Endpoint, response: Any) -> tuple[_Response, str | None]:
    """Read a response object; returns the parsed response and the raw body text to keep."""
    body = response.get("body")
    body_raw = response.get("body_raw")
    raw_text = body_raw if isinstance(body_raw, str) else None
    if raw_text is None and body is not None:
        raw_text = orjson.dumps(body).decode()
    status = response.get("status_code")
    if isinstance(status, int) and not 200 <= status < 300:
        return _Response(
            failure="failed_http", error=f"HTTP {status}: {_error_text(body, body_raw)}"
        ), raw_text
    if endpoint == "non_model":
        return _Response(), raw_text
    if body is None and isinstance(body_raw, str) and body_raw.lstrip().startswith("{"):
        try:
            body = orjson.loads(body_raw)
        except orjson.JSONDecodeError:
            body = None
    complete = True
    error = None
    if body is None:
        if not isinstance(body_raw, str):
            return _Response(failure="truncated_stream", error="response body not logged"), raw_text
        try:
            rebuild = {
                "anthropic_messages": sse.rebuild_anthropic,
                "openai_chat": sse.rebuild_openai_chat,
                "openai_responses": sse.rebuild_openai_responses,
            }[endpoint]
            streamed = rebuild(body_raw)
        except sse.SSEError as exc:
            raise FormatError(f"response SSE does not parse: {exc}") from None
        body, complete, error = streamed.body, streamed.complete, streamed.error
    if not isinstance(body, dict):
        raise FormatError(f"{endpoint} response body is not a JSON object")
    if endpoint == "anthropic_messages":
        out = _anthropic_response(body)
    elif endpoint == "openai_chat":
        out = _openai_response(body)
    else:
        out = _responses_response(body)
    if not complete:
        out.failure = "truncated_stream"
        out.error = error or "stream ended without its final event"
    return out, raw_text


def _anthropic_response(body: dict[str, Any]) -> _Response:
    content = body.get("content") or []
    blocks = [_anthropic_block(b) for b in content] if isinstance(content, list) else content
    u = body.get("usage") or {}
    usage = Usage(
        input_tokens=u.get("input_tokens"),
        output_tokens=u.get("output_tokens"),
        cache_read_input_tokens=u.get("cache_read_input_tokens"),
        cache_creation_input_tokens=u.get("cache_creation_input_tokens"),
    )
    msg = {"role": "assistant", "content": normalize_blocks(blocks)}
    return _Response(msg, body.get("stop_reason"), usage, body.get("model"))


def _openai_usage(u: dict[str, Any]) -> Usage:
    details = u.get("prompt_tokens_details") or u.get("input_tokens_details") or {}
    return Usage(
        input_tokens=u.get("prompt_tokens", u.get("input_tokens")),
        output_tokens=u.get("completion_tokens", u.get("output_tokens")),
        cache_read_input_tokens=details.get("cached_tokens"),
    )


def _token_id(token: Any) -> int | None:
    if isinstance(token, str) and token.startswith("token_id:"):
        try:
            return int(token[len("token_id:") :])
        except ValueError:
            return None
    return None


def _openai_response(body: dict[str, Any]) -> _Response:
    choices = body.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    msg_raw = choice.get("message") or {}
    if "text" in choice and not msg_raw:
        msg_raw = {"role": "assistant", "content": choice["text"]}
    msg = openai_message({**msg_raw, "role": "assistant"})
    rollout = _vllm_rollout(body, choice)
    return _Response(
        msg,
        choice.get("finish_reason"),
        _openai_usage(body.get("usage") or {}),
        body.get("model"),
        rollout,
    )


def _content_tokens(
    choice: dict[str, Any],
) -> tuple[list[Any] | None, list[int | None] | None, list[Any] | None]:
    """(logprobs, token ids, token text) from OpenAI / vLLM `logprobs.content`, None where absent.

    Ids only when every token is `token_id:N`; text only when the server sent text (no token
    is `token_id:N`: those are ids, not text)."""
    content = (choice.get("logprobs") or {}).get("content")
    if not isinstance(content, list) or not content:
        return None, None, None
    entries = [e for e in content if isinstance(e, dict)]
    logprobs = [e.get("logprob") for e in entries]
    tokens = [e.get("token") for e in entries]
    ids = [_token_id(t) for t in tokens]
    all_ids = ids if ids and all(i is not None for i in ids) else None
    texts = None
    if tokens and all(isinstance(t, str) for t in tokens) and all(i is None for i in ids):
        texts = tokens
    return logprobs, all_ids, texts


def _meta_info_tokens(
    body: dict[str, Any], choice: dict[str, Any]
) -> tuple[list[Any], list[Any], list[str] | None] | None:
    """(logprobs, token ids, token text or None) from SGLang `meta_info.output_token_logprobs`
    ([logprob, id, text?] triples); None when there is no such list."""
    meta = body.get("meta_info") or choice.get("meta_info")
    if not isinstance(meta, dict) or not isinstance(meta.get("output_token_logprobs"), list):
        return None
    triples = [t for t in meta["output_token_logprobs"] if isinstance(t, list) and len(t) >= 2]
    texts = None
    if triples and all(len(t) >= 3 and isinstance(t[2], str) for t in triples):
        texts = [t[2] for t in triples]
    return [t[0] for t in triples], [t[1] for t in triples], texts


def _vllm_rollout(body: dict[str, Any], choice: dict[str, Any]) -> Rollout | None:
    """Token ids / logprobs / token text from vLLM (`return_token_ids`, `token_id:N`), OpenAI
    `logprobs.content` or SGLang meta_info."""
    prompt_ids = body.get("prompt_token_ids")
    output_ids = choice.get("token_ids")
    logprobs, content_ids, texts = _content_tokens(choice)
    if output_ids is None:
        output_ids = content_ids
    meta = _meta_info_tokens(body, choice)
    if meta is not None:
        meta_logprobs, meta_ids, meta_texts = meta
        logprobs = logprobs or meta_logprobs
        output_ids = output_ids or meta_ids
        if texts is None:
            texts = meta_texts
    if prompt_ids is None and output_ids is None and logprobs is None:
        return None
    return Rollout(
        prompt_token_ids=prompt_ids,
        output_token_ids=output_ids,
        output_logprobs=logprobs,
        output_tokens=texts,
    )


def _responses_response(body: dict[str, Any]) -> _Response:
    output = body.get("output") or []
    msg = responses_group_message(output) if output else {"role": "assistant", "content": []}
    msg["role"] = "assistant"
    status = body.get("status")
    if status == "incomplete":
        status = (body.get("incomplete_details") or {}).get("reason") or status
    return _Response(msg, status, _openai_usage(body.get("usage") or {}), body.get("model"))


@dataclass
class Identity:
    """Who a call belongs to, as far as the record itself says."""

    episode_id: str | None
    session_id: str | None
    turn_type: str | None
    harness_hint: str | None
    harness_evidence: str | None = None
    """Why `harness_hint` (identity.WIRE_MARKERS, else the identity source)."""


def _user_id_session(metadata: Any) -> str | None:
    """The session part of Anthropic `metadata.user_id` (`..._session_<id>` or a JSON string)."""
    if not isinstance(metadata, dict):
        return None
    uid = metadata.get("user_id")
    if not isinstance(uid, str):
        return None
    if uid.startswith("{"):
        try:
            sid = orjson.loads(uid).get("session_id")
            return str(sid) if sid else None
        except (orjson.JSONDecodeError, AttributeError):
            return None
    _, sep, session = uid.rpartition("_session_")
    return session or None if sep else None


def episode_identity(headers: dict[str, str], body: Any, clawviz: dict[str, Any]) -> Identity:
    """Episode identity per FORMATS §1, first rule that applies."""
    lower = {k.lower(): v for k, v in headers.items()}
    turn_type = lower.get("x-turn-type") or None
    session = None
    hint = None
    why = None
    for name in SESSION_HEADERS:
        if lower.get(name):
            session = lower[name]
            hint = _SESSION_HEADER_HARNESS.get(name, "openclaw")
            why = f"session header {name}"
            break
    model = body.get("model") if isinstance(body, dict) else None
    m = CLAWGYM_MODEL.match(model) if isinstance(model, str) else None
    if m:
        turn_type = turn_type or m.group(1)
        session = session or m.group(2)
        if hint is None:
            hint, why = "openclaw", "ClawGym model <turn_type>__<session>"
    if session is None and isinstance(body, dict):
        session = _user_id_session(body.get("metadata"))
        if hint is None and session:
            hint, why = "claude-code", "metadata.user_id session part"
    if not clawviz.get("harness"):  # the recorder's word wins: no marker search
        marked, evidence = identity.wire_harness(lower, body)
        if marked is not None:
            hint, why = marked, evidence
    turn_type = clawviz.get("role") or turn_type
    episode = clawviz.get("episode_id") or session
    return Identity(str(episode) if episode else None, session, turn_type, hint, why)


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def _float_or_none(v: Any) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def _clawviz_rollout(obj: Any) -> Rollout | None:
    if not isinstance(obj, dict):
        return None
    known = Rollout.__dataclass_fields__
    return Rollout(**{k: v for k, v in obj.items() if k in known})


def _merge_rollout(primary: Rollout | None, server: Rollout | None) -> Rollout | None:
    """The recorder's rollout wins field by field; the server's fills the gaps."""
    if primary is None or server is None:
        return primary or server
    for name in Rollout.__dataclass_fields__:
        if getattr(primary, name) is None:
            setattr(primary, name, getattr(server, name))
    return primary


def parse_exchange(
    record: Any,
    *,
    source_file: str,
    line: int,
    call_id: str,
    file_episode: str,
    cache: MessageCache | None = None,
) -> ParsedExchange:
    """Parse one exchange-log record; raise FormatError with a one-line reason if it is none.

    FormatError is the only error: a value of a shape no converter expects (found by the
    fuzzing in tests/hostile) is refused as an unexpected shape, never raised as a TypeError."""
    try:
        return _parse_exchange(
            record,
            source_file=source_file,
            line=line,
            call_id=call_id,
            file_episode=file_episode,
            cache=cache,
        )
    except FormatError:
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        text = str(exc).splitlines()[0] if str(exc) else ""
        raise FormatError(
            f"exchange record has an unexpected shape ({type(exc).__name__}: {text[:200]})"
        ) from exc


def _parse_exchange(
    record: Any,
    *,
    source_file: str,
    line: int,
    call_id: str,
    file_episode: str,
    cache: MessageCache | None = None,
) -> ParsedExchange:
    if not isinstance(record, dict):
        raise FormatError(f"JSON {type(record).__name__} is not an exchange record")
    request = record.get("request")
    if not isinstance(request, dict):
        raise FormatError("not an exchange record (no 'request' object)")
    url = request.get("url")
    if not isinstance(url, str) or not url:
        raise FormatError("exchange request has no 'url'")
    response = record.get("response")
    if response is not None and not isinstance(response, dict):
        raise FormatError("exchange 'response' is neither an object nor null")
    method = str(request.get("method") or "POST")
    endpoint, unknown = endpoint_of(method, url)
    body = request.get("body")
    req = _parse_request(endpoint, body, cache)
    headers = redact_headers(request.get("headers"))
    clawviz = record.get("clawviz") if isinstance(record.get("clawviz"), dict) else {}
    ident = episode_identity(headers, body, clawviz)

    if response is None:
        resp, raw_response = _Response(failure="orphaned_request", error="no response logged"), None
        status = None
    else:
        resp, raw_response = _parse_response(endpoint, response)
        status = _int_or_none(response.get("status_code"))
    request_model = body.get("model") if isinstance(body, dict) else None
    extra: dict[str, Any] = {}
    if unknown:
        extra["unknown_endpoint"] = urlsplit(url).path
    if record.get("note"):
        extra["note"] = record["note"]
    if response is not None and isinstance(response.get("headers"), dict):
        extra["response_headers"] = redact_headers(response["headers"])
    if clawviz.get("harness"):
        extra["harness_evidence"] = "recorder metadata clawviz.harness"
    elif ident.harness_evidence:
        extra["harness_evidence"] = ident.harness_evidence
    rest = {k: v for k, v in clawviz.items() if k not in _KNOWN_CLAWVIZ}
    if rest:
        extra["clawviz"] = rest
    call = Call(
        call_id=call_id,
        source_file=source_file,
        line=line,
        endpoint=endpoint,
        method=method,
        url=redact_url(url),
        seq=_int_or_none(clawviz.get("seq")),
        t_request=_float_or_none(request.get("timestamp")),
        t_response=_float_or_none(response.get("timestamp")) if response else None,
        http_status=status,
        episode_id=ident.episode_id or file_episode,
        task_id=clawviz.get("task_id"),
        harness=clawviz.get("harness") or ident.harness_hint,
        attempt=_int_or_none(clawviz.get("attempt")),
        model=resp.model or (request_model if isinstance(request_model, str) else None),
        model_role=clawviz.get("model_role"),
        turn_type=ident.turn_type,
        session_id=ident.session_id,
        headers=headers,
        system=system_text(req.system_raw),
        tools=req.tool_names,
        messages=req.messages,
        response=resp.message,
        stop_reason=resp.stop_reason,
        usage=resp.usage,
        failure=resp.failure,  # type: ignore[arg-type]
        error=resp.error,
        delivered=clawviz.get("delivered") if isinstance(clawviz.get("delivered"), bool) else None,
        rollout=_merge_rollout(_clawviz_rollout(clawviz.get("rollout")), resp.rollout),
        extra=extra,
    )
    validate_call(call)
    return ParsedExchange(
        call=call,
        raw_messages=req.raw_messages,
        message_hashes=req.hashes,
        raw_wire=req.wires,
        system_raw=req.system_raw,
        tools_raw=req.tools_raw,
        envelope=req.envelope,
        raw_response=raw_response,
        has_identity=ident.episode_id is not None,
        unknown_endpoint=unknown,
    )
