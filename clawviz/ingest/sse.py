"""Server-sent-event bodies (`body_raw`): split into frames and rebuild the final message.

`encode_frame` / `encode_stream` write the same frames (`event: NAME`, `data: JSON`, a blank
line): the one SSE writer of the package (the sample generator's streams use it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import orjson


class SSEError(ValueError):
    """The body is not a server-sent-event stream that can be read."""


@dataclass
class Frame:
    """One SSE frame: its `event:` name (may be empty) and its decoded `data:` payload."""

    event: str
    data: Any
    """Parsed JSON, or the literal string '[DONE]'."""


@dataclass
class FrameSplit:
    """The frames of a stream plus whether its last frame was cut off mid-JSON."""

    frames: list[Frame]
    cut_off: bool = False


_DATA_LINE = re.compile(r"^data: ?([^\r\n]*)", re.MULTILINE)
# The same lines for a body without "\r": `.*` lets the regex engine scan a line in one step.
_DATA_LINE_LF = re.compile(r"^data: ?(.*)", re.MULTILINE)
_DONE_LINE = re.compile(r"^data: ?\[DONE\]", re.MULTILINE)


def _event_data(text: str) -> tuple[Iterable[tuple[str, Any]], bool]:
    """The frames as (event, data) pairs plus the cut-off flag (no Frame objects: hot path)."""
    fast = _split_fast(text)
    if fast is not None:
        decoded, cut_off = fast
        # A lazy zip: CPython reuses its pair tuple when the loop unpacks it at once.
        return zip(repeat(""), decoded), cut_off
    split = _split_slow(text)
    return [(fr.event, fr.data) for fr in split.frames], split.cut_off


def _split_fast(text: str) -> tuple[list[Any], bool] | None:
    """All data payloads decoded in one JSON parse; None when any frame needs a closer look.

    Every frame of a stream read this way has no `event:` name that matters: the rebuilders
    take an event's kind from its data's `type`, as every format sends it."""
    pattern = _DATA_LINE if "\r" in text else _DATA_LINE_LF
    payloads = pattern.findall(text)
    if "[DONE]" in text:
        if payloads and payloads[-1].strip() == "[DONE]" and text.count("[DONE]") == 1:
            payloads.pop()  # the usual place: the last frame, nowhere else
        else:
            payloads = [p for p in payloads if p.strip() != "[DONE]"]
    if not payloads:
        return None
    try:
        decoded = orjson.loads("[" + ",".join(payloads) + "]")
    except orjson.JSONDecodeError:
        return None
    if len(decoded) != len(payloads):
        return None
    # `data: [DONE]` can only be the last frame; looking at the tail avoids a full scan.
    if _DONE_LINE.search(text[-64:]):
        decoded.append("[DONE]")
    # An `event:` line with no data after it is a frame the recorder cut off.
    tail = text.rstrip().rsplit("\n", 1)[-1]
    return decoded, tail.startswith("event:")


def _split_slow(text: str) -> FrameSplit:
    """Frame by frame, so that a bad payload can be named (or seen to be a cut-off tail)."""
    chunks = [c for c in text.replace("\r\n", "\n").split("\n\n") if c.strip()]
    frames: list[Frame] = []
    cut_off = False
    for i, chunk in enumerate(chunks):
        event = ""
        data_lines: list[str] = []
        for ln in chunk.split("\n"):
            if ln.startswith(":"):
                continue  # SSE comment / keep-alive
            name, _, value = ln.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value.strip()
            elif name == "data":
                data_lines.append(value)
        if not data_lines:
            if event and i == len(chunks) - 1:
                cut_off = True
            continue
        payload = "\n".join(data_lines)
        if payload.strip() == "[DONE]":
            frames.append(Frame(event, "[DONE]"))
            continue
        try:
            frames.append(Frame(event, orjson.loads(payload)))
        except orjson.JSONDecodeError as exc:
            if i == len(chunks) - 1:
                # A recorder that stopped mid-stream leaves half a frame: truncation, not garbage.
                cut_off = True
                break
            raise SSEError(f"SSE frame {i + 1}: data is not JSON ({exc})") from None
    if not frames and not cut_off:
        raise SSEError("no SSE data frames")
    return FrameSplit(frames, cut_off)


@dataclass
class StreamResult:
    """A rebuilt streamed response, in the wire format's own non-streaming JSON shape."""

    body: dict[str, Any]
    complete: bool
    """The stream's final event was seen and no error event came."""
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class _AnthropicStream:
    """What the events of one Anthropic stream have said so far."""

    message: dict[str, Any] = field(default_factory=lambda: {"role": "assistant", "content": []})
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    partial_json: dict[int, list[str]] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    complete: bool = False
    error: str | None = None

    def event(self, kind: str | None, data: dict[str, Any]) -> None:
        """Every event but content_block_delta (the hot one, handled inline by the caller)."""
        if kind == "message_start":
            start = data.get("message") or {}
            self.message.update({k: v for k, v in start.items() if k not in ("content", "usage")})
            self.usage.update(start.get("usage") or {})
        elif kind == "content_block_start":
            idx = int(data.get("index", len(self.blocks)))
            self.blocks[idx] = dict(data.get("content_block") or {})
        elif kind == "content_block_stop":
            idx = int(data.get("index", 0))
            _finish_tool_input(self.blocks.get(idx), self.partial_json.pop(idx, None))
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    self.message[key] = delta[key]
            # message_delta usage is cumulative, so it replaces the start values it names.
            usage = data.get("usage") or {}
            self.usage.update({k: v for k, v in usage.items() if v is not None})
        elif kind == "message_stop":
            self.complete = True
        elif kind == "error":
            err = data.get("error") or {}
            self.error = f"{err.get('type', 'error')}: {err.get('message', '')}".strip()


def rebuild_anthropic(text: str) -> StreamResult:
    """Rebuild an Anthropic Messages response from its SSE events (FORMATS §2)."""
    frames, cut_off = _event_data(text)
    st = _AnthropicStream()
    blocks, partial_json = st.blocks, st.partial_json
    for event, data in frames:
        if not isinstance(data, dict):
            continue
        kind = data.get("type") or event
        if kind != "content_block_delta":
            st.event(kind, data)
            continue
        # Most frames are text deltas: handled here without the generic helper.
        idx = data.get("index", 0)
        if type(idx) is not int:
            idx = int(idx)
        block = blocks.get(idx)
        if block is None:
            block = blocks[idx] = {"type": "text", "text": ""}
        delta = data.get("delta") or {}
        if delta.get("type") == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        else:
            _apply_anthropic_delta(block, delta, partial_json.setdefault(idx, []))
    for idx, parts in partial_json.items():
        _finish_tool_input(blocks.get(idx), parts)
    message = st.message
    message["content"] = [blocks[i] for i in sorted(blocks)]
    message["usage"] = st.usage
    return StreamResult(message, st.complete and st.error is None and not cut_off, st.error)


def _apply_anthropic_delta(block: dict[str, Any], delta: dict[str, Any], parts: list[str]) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + delta.get("text", "")
    elif kind == "input_json_delta":
        parts.append(delta.get("partial_json", ""))
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
    elif kind == "signature_delta":
        block["signature"] = block.get("signature", "") + delta.get("signature", "")
    elif kind == "citations_delta":
        block.setdefault("citations", []).append(delta.get("citation"))


def _finish_tool_input(block: dict[str, Any] | None, parts: list[str] | None) -> None:
    """Join a tool_use block's partial_json fragments and parse them once."""
    if block is None or not parts:
        return
    joined = "".join(parts)
    try:
        block["input"] = orjson.loads(joined) if joined.strip() else {}
    except orjson.JSONDecodeError:
        # Keep the text: a cut-off stream leaves half an argument object.
        block["input"] = {"_partial_json": joined}


_CHAT_HEADER_KEYS = ("id", "model", "created", "system_fingerprint")


def _chat_tool_fragments(frags: list[Any], calls: dict[int, dict[str, Any]]) -> None:
    """Add one delta's tool-call fragments to a choice's tool calls (by tool index)."""
    for frag in frags:
        tidx = int(frag.get("index", 0))
        tc = calls.get(tidx)
        if tc is None:
            tc = calls[tidx] = {
                "id": None,
                "type": "function",
                "function": {"name": "", "arguments": ""},
            }
        if frag.get("id"):
            tc["id"] = frag["id"]
        fn = frag.get("function") or {}
        if fn.get("name"):
            tc["function"]["name"] += fn["name"]
        if fn.get("arguments"):
            tc["function"]["arguments"] += fn["arguments"]


def _chat_choice(
    ch: dict[str, Any],
    choices: dict[int, dict[str, Any]],
    tool_calls: dict[int, dict[int, dict[str, Any]]],
) -> bool:
    """Fold one chunk's choice delta into the choice it continues; True when it finished."""
    idx = ch.get("index", 0)
    if type(idx) is not int:
        idx = int(idx)
    choice = choices.get(idx)
    if choice is None:
        choice = choices[idx] = {"index": idx, "message": {"role": "assistant", "content": None}}
    msg = choice["message"]
    delta = ch.get("delta") or {}
    for key in ("content", "reasoning_content", "reasoning"):
        piece = delta.get(key)
        if piece:
            msg[key] = (msg.get(key) or "") + piece
    frags = delta.get("tool_calls")
    if frags:
        _chat_tool_fragments(frags, tool_calls.setdefault(idx, {}))
    finished = False
    if ch.get("finish_reason"):
        choice["finish_reason"] = ch["finish_reason"]
        finished = True
    lp = (ch.get("logprobs") or {}).get("content")
    if lp:
        choice.setdefault("logprobs", {"content": []})["content"].extend(lp)
    if ch.get("token_ids"):
        choice.setdefault("token_ids", []).extend(ch["token_ids"])
    return finished


def _chat_error(data: dict[str, Any]) -> str:
    err = data["error"]
    return err.get("message", str(err)) if isinstance(err, dict) else str(err)


def rebuild_openai_chat(text: str) -> StreamResult:
    """Rebuild a Chat Completions response from `chat.completion.chunk` frames."""
    frames, cut_off = _event_data(text)
    body: dict[str, Any] = {"object": "chat.completion", "choices": []}
    choices: dict[int, dict[str, Any]] = {}
    tool_calls: dict[int, dict[int, dict[str, Any]]] = {}
    done = finished = False
    error: str | None = None
    header_keys = list(_CHAT_HEADER_KEYS)
    for _event, data in frames:
        if data == "[DONE]":
            done = True
            continue
        if not isinstance(data, dict):
            continue
        if "error" in data and not data.get("choices"):
            error = _chat_error(data)
            continue
        if header_keys:
            # The first chunk that carries each of these names it for the whole response.
            for key in [k for k in header_keys if k in data]:
                body[key] = data[key]
                header_keys.remove(key)
        if data.get("usage"):
            body["usage"] = data["usage"]
        if data.get("prompt_token_ids") is not None:
            body["prompt_token_ids"] = data["prompt_token_ids"]
        for ch in data.get("choices") or []:
            finished = _chat_choice(ch, choices, tool_calls) or finished
    for idx, calls in tool_calls.items():
        choices[idx]["message"]["tool_calls"] = [calls[i] for i in sorted(calls)]
    body["choices"] = [choices[i] for i in sorted(choices)]
    complete = (done or finished) and error is None and not cut_off
    return StreamResult(body, complete, error)


def _responses_text_delta(items: dict[int, dict[str, Any]], data: dict[str, Any]) -> None:
    item = items.setdefault(
        int(data.get("output_index", 0)), {"type": "message", "role": "assistant"}
    )
    content = item.setdefault("content", [])
    cidx = int(data.get("content_index", 0))
    while len(content) <= cidx:
        content.append({"type": "output_text", "text": ""})
    content[cidx]["text"] = content[cidx].get("text", "") + data.get("delta", "")


def _responses_error(data: dict[str, Any]) -> str:
    err = (data.get("response") or {}).get("error") or data.get("error") or data
    return err.get("message", str(err)) if isinstance(err, dict) else str(err)


def rebuild_openai_responses(text: str) -> StreamResult:
    """Rebuild a Responses API response from its `response.*` events."""
    frames, cut_off = _event_data(text)
    body: dict[str, Any] = {"object": "response", "output": []}
    items: dict[int, dict[str, Any]] = {}
    complete = False
    error: str | None = None
    for event, data in frames:
        if not isinstance(data, dict):
            continue
        kind = data.get("type") or event
        if kind in ("response.created", "response.in_progress"):
            body.update({k: v for k, v in (data.get("response") or {}).items() if k != "output"})
        elif kind in ("response.output_item.added", "response.output_item.done"):
            items[int(data.get("output_index", len(items)))] = dict(data.get("item") or {})
        elif kind == "response.output_text.delta":
            _responses_text_delta(items, data)
        elif kind == "response.function_call_arguments.delta":
            item = items.setdefault(int(data.get("output_index", 0)), {"type": "function_call"})
            item["arguments"] = item.get("arguments", "") + data.get("delta", "")
        elif kind in ("response.completed", "response.incomplete"):
            body.update(data.get("response") or {})
            complete = True
        elif kind in ("response.failed", "error"):
            error = _responses_error(data)
    if not body.get("output"):
        body["output"] = [items[i] for i in sorted(items)]
    return StreamResult(body, complete and error is None and not cut_off, error)


DONE = "[DONE]"
"""The payload of OpenAI's last frame (`data: [DONE]`)."""


def compact_json(obj: Any) -> str:
    """Compact JSON as the recorders write it (non-ASCII kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def encode_frame(
    data: Any, event: str | None = None, dumps: Callable[[Any], str] = compact_json
) -> str:
    """One SSE frame: `event: NAME` when named, then `data: PAYLOAD` and a blank line. A string
    payload is sent as it is (`[DONE]`, or a body that is not JSON), anything else as JSON."""
    payload = data if isinstance(data, str) else dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


def encode_stream(
    frames: Iterable[tuple[str | None, Any]],
    *,
    done: bool = False,
    dumps: Callable[[Any], str] = compact_json,
) -> str:
    """A whole stream of `(event or None, data)` frames; `done` ends it with `data: [DONE]`."""
    body = "".join(encode_frame(data, event, dumps) for event, data in frames)
    return body + encode_frame(DONE) if done else body
