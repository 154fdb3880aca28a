"""What the logs themselves say about a call's reply, read straight from the raw lines.

The export tests compare clawviz's rows with these values, so the expected text, tool calls,
token ids and logprobs come from the log files (JSON bodies and SSE streams read here with a
few lines of plain json), never from clawviz's own parsing.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any


@dataclass
class RawReply:
    text: str = ""
    tools: list[tuple[str, Any]] = field(default_factory=list)
    """(name, parsed arguments) per tool call, in order."""
    prompt_ids: list[int] | None = None
    output_ids: list[int] | None = None
    logprobs: list[float] | None = None


@cache
def _lines(path: str) -> list[str]:
    p = Path(path)
    data = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
    return data.decode().split("\n")


def raw_record(path: str, line: int) -> dict[str, Any]:
    return json.loads(_lines(path)[line - 1])


def _args(v: Any) -> Any:
    if isinstance(v, str):
        return json.loads(v) if v.strip() else {}
    return v


def _token(entry: dict) -> int | None:
    t = entry.get("token")
    if isinstance(t, str) and t.startswith("token_id:"):
        return int(t.split(":", 1)[1])
    return None


def _sse(raw: str) -> list[dict]:
    out = []
    for ln in raw.splitlines():
        if ln.startswith("data:"):
            payload = ln[5:].strip()
            if payload and payload != "[DONE]":
                out.append(json.loads(payload))
    return out


def raw_reply(record: dict[str, Any]) -> RawReply:
    """The reply of one logged exchange: text, tool calls, token ids, logprobs."""
    out = RawReply()
    resp = record.get("response") or {}
    body = resp.get("body")
    texts: list[str] = []
    lps: list[float] = []
    ids: list[int] = []
    if isinstance(body, dict) and "choices" in body:
        choice = body["choices"][0]
        msg = choice.get("message") or {}
        texts.append(msg.get("content") or "")
        out.tools = [
            (tc["function"]["name"], _args(tc["function"]["arguments"]))
            for tc in msg.get("tool_calls") or []
        ]
        out.prompt_ids = body.get("prompt_token_ids")
        entries = (choice.get("logprobs") or {}).get("content") or []
        lps = [e["logprob"] for e in entries]
        ids = choice.get("token_ids") or [t for e in entries if (t := _token(e)) is not None]
    elif isinstance(body, dict) and "content" in body:
        for b in body["content"]:
            if b.get("type") == "text":
                texts.append(b["text"])
            elif b.get("type") == "tool_use":
                out.tools.append((b["name"], b["input"]))
    elif isinstance(resp.get("body_raw"), str):
        tool_parts: dict[int, list] = {}
        for ev in _sse(resp["body_raw"]):
            if "choices" in ev:  # Chat Completions chunks
                if ev.get("prompt_token_ids"):
                    out.prompt_ids = ev["prompt_token_ids"]
                for ch in ev["choices"]:
                    d = ch.get("delta") or {}
                    texts.append(d.get("content") or "")
                    for tc in d.get("tool_calls") or []:
                        slot = tool_parts.setdefault(tc["index"], ["", ""])
                        fn = tc.get("function") or {}
                        slot[0] += fn.get("name") or ""
                        slot[1] += fn.get("arguments") or ""
                    ids.extend(ch.get("token_ids") or [])
                    lps.extend(
                        e["logprob"] for e in (ch.get("logprobs") or {}).get("content") or []
                    )
            elif ev.get("type") == "content_block_start":
                blk = ev["content_block"]
                if blk.get("type") == "tool_use":
                    tool_parts[ev["index"]] = [blk["name"], ""]
            elif ev.get("type") == "content_block_delta":
                d = ev["delta"]
                if d.get("type") == "text_delta":
                    texts.append(d["text"])
                elif d.get("type") == "input_json_delta":
                    tool_parts[ev["index"]][1] += d["partial_json"]
        out.tools = [(n, _args(a)) for _, (n, a) in sorted(tool_parts.items())]
    out.text = "".join(texts)
    rollout = (record.get("clawviz") or {}).get("rollout") or {}
    out.output_ids = rollout.get("output_token_ids") or ids or None
    out.logprobs = rollout.get("output_logprobs") or lps or None
    out.prompt_ids = rollout.get("prompt_token_ids") or out.prompt_ids
    return out
