"""Wire shapes the sample logs use: Anthropic SSE, OpenAI chat responses/chunks, fake token ids.

The token ids come from a tiny deterministic word-piece tokenizer and a Qwen-like chat template
rendered piece by piece, so a later call's prompt ids start exactly with an earlier call's
prompt + output ids (the clean-append case of PIPELINE §6).
"""

from __future__ import annotations

import json
import random
import re
import zlib
from typing import Any

from clawviz.ingest import compact_json as dumps
from clawviz.ingest import encode_stream

IM_START = 151644
IM_END = 151645
_TOKEN_RE = re.compile(r"\s*[A-Za-z0-9_]+|\s*[^\sA-Za-z0-9_]|\s+")


def token_strings(text: str) -> list[str]:
    """Split text into tokens whose concatenation is exactly `text`."""
    return _TOKEN_RE.findall(text)


def token_id(tok: str) -> int:
    """A stable fake vocabulary id for a token string."""
    return zlib.crc32(tok.encode()) % 150000 + 10


def tokenize(text: str) -> list[int]:
    """Token ids of `text`."""
    return [token_id(t) for t in token_strings(text)]


def count_tokens(text: str) -> int:
    """Number of tokens in `text`."""
    return len(token_strings(text))


# ---------------------------------------------------------------- Anthropic Messages (SSE)


def _chunks(rng: random.Random, text: str, lo: int, hi: int) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(lo, hi)
        out.append(text[i : i + n])
        i += n
    return out or [""]


def anthropic_sse(
    rng: random.Random,
    *,
    msg_id: str,
    model: str,
    content: list[dict[str, Any]],
    stop_reason: str,
    usage: dict[str, int],
    truncate_after: int | None = None,
) -> str:
    """The `body_raw` of a streamed Messages response; `truncate_after` cuts it after N frames."""
    start_usage = {**usage, "output_tokens": 1}
    frames: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    for i, block in enumerate(content):
        kind = block["type"]
        start: dict[str, Any]
        if kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": c} for c in _chunks(rng, block["text"], 24, 90)
            ]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": c}
                for c in _chunks(rng, block["thinking"], 20, 60)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = dumps(block["input"])
            size = max(8, len(raw) // 4)
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": c}
                for c in _chunks(rng, raw, size // 2, size + 20)
            ]
        else:
            raise ValueError(kind)
        frames.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": start},
            )
        )
        frames += [
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
            for d in deltas
        ]
        frames.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    frames.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    frames.append(("message_stop", {"type": "message_stop"}))
    if truncate_after is not None:
        frames = frames[:truncate_after]
    return encode_stream(frames)


# ---------------------------------------------------------------- OpenAI chat + vLLM token ids


def render_assistant_text(msg: dict[str, Any]) -> str:
    """What the model generated for an OpenAI assistant message (content + Hermes tool calls)."""
    parts = [msg.get("content") or ""]
    for tc in msg.get("tool_calls") or []:
        fn = tc["function"]
        call = dumps({"name": fn["name"], "arguments": json.loads(fn["arguments"])})
        parts.append(f"\n<tool_call>\n{call}\n</tool_call>")
    return "".join(parts).lstrip("\n")


def _message_text(msg: dict[str, Any]) -> str:
    if msg["role"] == "assistant":
        return render_assistant_text(msg)
    if msg["role"] == "tool":
        return f"<tool_response>\n{msg['content']}\n</tool_response>"
    return msg["content"] if isinstance(msg["content"], str) else dumps(msg["content"])


def prompt_token_ids(messages: list[dict[str, Any]]) -> list[int]:
    """Chat-template ids of `messages` plus the generation prompt, rendered piece by piece."""
    ids: list[int] = []
    for msg in messages:
        role = "user" if msg["role"] == "tool" else msg["role"]
        ids += [IM_START, *tokenize(role + "\n"), *tokenize(_message_text(msg)), IM_END]
        ids += tokenize("\n")
    return ids + [IM_START, *tokenize("assistant\n")]


def output_tokens(msg: dict[str, Any]) -> list[str]:
    """Generated token strings of an assistant message (the end token excluded)."""
    return token_strings(render_assistant_text(msg))


def logprob(rng: random.Random) -> float:
    """A plausible sampled-token log-probability."""
    return round(-abs(rng.gauss(0, 0.35)) - 0.0001, 4)


def openai_response(
    rng: random.Random,
    *,
    resp_id: str,
    created: int,
    model: str,
    message: dict[str, Any],
    finish_reason: str,
    prompt_ids: list[int],
    with_token_ids: bool,
) -> tuple[dict[str, Any], list[int], list[float]]:
    """A non-streamed chat.completion body; returns (body, output ids, output logprobs)."""
    toks = output_tokens(message)
    out_ids = [token_id(t) for t in toks] + [IM_END]
    lps = [logprob(rng) for _ in out_ids]
    content = [
        {"token": f"token_id:{i}", "logprob": lp} for i, lp in zip(out_ids, lps, strict=True)
    ]
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "reasoning_content": None, **message},
        "logprobs": {"content": content},
        "finish_reason": finish_reason,
        "stop_reason": None,
    }
    body: dict[str, Any] = {
        "id": resp_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": len(out_ids),
            "total_tokens": len(prompt_ids) + len(out_ids),
            "prompt_tokens_details": None,
        },
    }
    if with_token_ids:
        choice["token_ids"] = out_ids
        body["prompt_token_ids"] = prompt_ids
    return body, out_ids, lps


def openai_stream(
    rng: random.Random,
    *,
    resp_id: str,
    created: int,
    model: str,
    message: dict[str, Any],
    finish_reason: str,
    prompt_ids: list[int],
) -> tuple[str, list[int], list[float]]:
    """A streamed chat completion (`data:` chunks, tool-call fragments, usage, [DONE])."""
    text = message.get("content") or ""
    text_toks = token_strings(text)
    all_toks = output_tokens(message)
    call_toks = all_toks[len(text_toks) :]
    out_ids = [token_id(t) for t in all_toks] + [IM_END]
    lps = [logprob(rng) for _ in out_ids]
    pos = 0

    def chunk(delta: dict[str, Any], n_tokens: int, finish: str | None = None) -> dict[str, Any]:
        nonlocal pos
        ids, lp = out_ids[pos : pos + n_tokens], lps[pos : pos + n_tokens]
        pos += n_tokens
        c = {
            "index": 0,
            "delta": delta,
            "logprobs": {
                "content": [
                    {"token": f"token_id:{i}", "logprob": v} for i, v in zip(ids, lp, strict=True)
                ]
            },
            "finish_reason": finish,
            "token_ids": ids,
        }
        return {
            "id": resp_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [c],
        }

    frames = [chunk({"role": "assistant", "content": ""}, 0)]
    frames[0]["prompt_token_ids"] = prompt_ids
    i = 0
    while i < len(text_toks):
        n = rng.randint(3, 9)
        frames.append(chunk({"content": "".join(text_toks[i : i + n])}, len(text_toks[i : i + n])))
        i += n
    calls = message.get("tool_calls") or []
    per_call = [len(call_toks) // max(1, len(calls))] * len(calls)
    if calls:
        per_call[-1] += len(call_toks) - sum(per_call)
    for idx, tc in enumerate(calls):
        args = tc["function"]["arguments"]
        pieces = _chunks(rng, args, max(6, len(args) // 3), max(12, len(args) // 2))
        budget = per_call[idx]
        share = [budget // (len(pieces) + 1)] * (len(pieces) + 1)
        share[-1] += budget - sum(share)
        first = {
            "index": idx,
            "id": tc["id"],
            "type": "function",
            "function": {"name": tc["function"]["name"], "arguments": ""},
        }
        frames.append(chunk({"tool_calls": [first]}, share[0]))
        for piece, n in zip(pieces, share[1:], strict=True):
            frames.append(
                chunk({"tool_calls": [{"index": idx, "function": {"arguments": piece}}]}, n)
            )
    frames.append(chunk({}, 1, finish_reason))
    usage = {
        "prompt_tokens": len(prompt_ids),
        "completion_tokens": len(out_ids),
        "total_tokens": len(prompt_ids) + len(out_ids),
    }
    frames.append(
        {
            "id": resp_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": usage,
        }
    )
    raw = encode_stream(((None, f) for f in frames), done=True)
    return raw, out_ids, lps
