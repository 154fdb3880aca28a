"""Server-sent-event bodies (`body_raw`): split into frames and rebuild the final message."""

from __future__ import annotations

import re
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


def split_frames(text: str) -> FrameSplit:
    """Split an SSE body into frames; a bad JSON payload is fatal unless it is the last frame."""
    fast = _split_fast(text)
    if fast is None:
        return _split_slow(text)
    pairs, cut_off = fast
    return FrameSplit([Frame(event, data) for event, data in pairs], cut_off)


def _event_data(text: str) -> tuple[list[tuple[str, Any]], bool]:
    """The frames as (event, data) pairs plus the cut-off flag (no Frame objects: hot path)."""
    fast = _split_fast(text)
    if fast is not None:
        return fast
    split = _split_slow(text)
    return [(fr.event, fr.data) for fr in split.frames], split.cut_off


def _split_fast(text: str) -> tuple[list[tuple[str, Any]], bool] | None:
    """All data payloads decoded in one JSON parse; None when any frame needs a closer look."""
    pattern = _DATA_LINE if "\r" in text else _DATA_LINE_LF
    payloads = pattern.findall(text)
    if "[DONE]" in text:
        payloads = [p for p in payloads if p.strip() != "[DONE]"]
    if not payloads:
        return None
    try:
        decoded = orjson.loads("[" + ",".join(payloads) + "]")
    except orjson.JSONDecodeError:
        return None
    if len(decoded) != len(payloads):
        return None
    pairs = list(zip(repeat("", len(decoded)), decoded, strict=True))
    # `data: [DONE]` can only be the last frame; looking at the tail avoids a full scan.
    if _DONE_LINE.search(text[-64:]):
        pairs.append(("", "[DONE]"))
    # An `event:` line with no data after it is a frame the recorder cut off.
    tail = text.rstrip().rsplit("\n", 1)[-1]
    return pairs, tail.startswith("event:")


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


def rebuild_anthropic(text: str) -> StreamResult:
    """Rebuild an Anthropic Messages response from its SSE events (FORMATS §2)."""
    frames, cut_off = _event_data(text)
    message: dict[str, Any] = {"role": "assistant", "content": []}
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, list[str]] = {}
    usage: dict[str, Any] = {}
    complete = False
    error: str | None = None
    for event, data in frames:
        if not isinstance(data, dict):
            continue
        kind = data.get("type") or event
        if kind == "content_block_delta":
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
                parts = partial_json.get(idx)
                if parts is None:
                    parts = partial_json[idx] = []
                _apply_anthropic_delta(block, delta, parts)
        elif kind == "message_start":
            start = data.get("message") or {}
            message.update({k: v for k, v in start.items() if k not in ("content", "usage")})
            usage.update(start.get("usage") or {})
        elif kind == "content_block_start":
            idx = int(data.get("index", len(blocks)))
            blocks[idx] = dict(data.get("content_block") or {})
        elif kind == "content_block_stop":
            idx = int(data.get("index", 0))
            _finish_tool_input(blocks.get(idx), partial_json.pop(idx, None))
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    message[key] = delta[key]
            # message_delta usage is cumulative, so it replaces the start values it names.
            usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            complete = True
        elif kind == "error":
            err = data.get("error") or {}
            error = f"{err.get('type', 'error')}: {err.get('message', '')}".strip()
    for idx, parts in partial_json.items():
        _finish_tool_input(blocks.get(idx), parts)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    message["usage"] = usage
    return StreamResult(message, complete and error is None and not cut_off, error)


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


def rebuild_openai_chat(text: str) -> StreamResult:
    """Rebuild a Chat Completions response from `chat.completion.chunk` frames."""
    frames, cut_off = _event_data(text)
    body: dict[str, Any] = {"object": "chat.completion", "choices": []}
    choices: dict[int, dict[str, Any]] = {}
    tool_calls: dict[int, dict[int, dict[str, Any]]] = {}
    done = False
    finished = False
    error: str | None = None
    header_keys = ["id", "model", "created", "system_fingerprint"]
    for _event, data in frames:
        if data == "[DONE]":
            done = True
            continue
        if not isinstance(data, dict):
            continue
        if "error" in data and not data.get("choices"):
            err = data["error"]
            error = err.get("message", str(err)) if isinstance(err, dict) else str(err)
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
            idx = ch.get("index", 0)
            if type(idx) is not int:
                idx = int(idx)
            choice = choices.get(idx)
            if choice is None:
                choice = choices[idx] = {
                    "index": idx,
                    "message": {"role": "assistant", "content": None},
                }
            msg = choice["message"]
            delta = ch.get("delta") or {}
            for key in ("content", "reasoning_content", "reasoning"):
                piece = delta.get(key)
                if piece:
                    msg[key] = (msg.get(key) or "") + piece
            for frag in delta.get("tool_calls") or []:
                tidx = int(frag.get("index", 0))
                tc = tool_calls.setdefault(idx, {}).setdefault(
                    tidx,
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if frag.get("id"):
                    tc["id"] = frag["id"]
                fn = frag.get("function") or {}
                if fn.get("name"):
                    tc["function"]["name"] += fn["name"]
                if fn.get("arguments"):
                    tc["function"]["arguments"] += fn["arguments"]
            if ch.get("finish_reason"):
                choice["finish_reason"] = ch["finish_reason"]
                finished = True
            lp = (ch.get("logprobs") or {}).get("content")
            if lp:
                choice.setdefault("logprobs", {"content": []})["content"].extend(lp)
            if ch.get("token_ids"):
                choice.setdefault("token_ids", []).extend(ch["token_ids"])
    for idx, calls in tool_calls.items():
        choices[idx]["message"]["tool_calls"] = [calls[i] for i in sorted(calls)]
    body["choices"] = [choices[i] for i in sorted(choices)]
    complete = (done or finished) and error is None and not cut_off
    return StreamResult(body, complete, error)


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
        elif kind == "response.output_item.added":
            items[int(data.get("output_index", len(items)))] = dict(data.get("item") or {})
        elif kind == "response.output_text.delta":
            item = items.setdefault(
                int(data.get("output_index", 0)), {"type": "message", "role": "assistant"}
            )
            content = item.setdefault("content", [])
            cidx = int(data.get("content_index", 0))
            while len(content) <= cidx:
                content.append({"type": "output_text", "text": ""})
            content[cidx]["text"] = content[cidx].get("text", "") + data.get("delta", "")
        elif kind == "response.function_call_arguments.delta":
            item = items.setdefault(int(data.get("output_index", 0)), {"type": "function_call"})
            item["arguments"] = item.get("arguments", "") + data.get("delta", "")
        elif kind == "response.output_item.done":
            items[int(data.get("output_index", len(items)))] = dict(data.get("item") or {})
        elif kind in ("response.completed", "response.incomplete"):
            final = data.get("response") or {}
            body.update(final)
            complete = True
        elif kind in ("response.failed", "error"):
            err = (data.get("response") or {}).get("error") or data.get("error") or data
            error = err.get("message", str(err)) if isinstance(err, dict) else str(err)
    if not body.get("output"):
        body["output"] = [items[i] for i in sorted(items)]
    return StreamResult(body, complete and error is None and not cut_off, error)
