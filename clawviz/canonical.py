"""Canonical forms of messages (FORMATS §2), used for storage keys and for tree matching.

Two levels: `message_hash` keys the content-addressed store (exact internal-shape content, with
cache_control and string-vs-block differences removed); `match_key` is the tolerant key the tree
builder compares (see its docstring).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from clawviz.types import Message


def dumps_canonical(obj: Any) -> bytes:
    """Deterministic JSON bytes: sorted keys, no whitespace."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def strip_cache_control(obj: Any) -> Any:
    """Return `obj` with every `cache_control` key removed, recursively."""
    if isinstance(obj, dict):
        return {k: strip_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [strip_cache_control(v) for v in obj]
    return obj


def normalize_blocks(content: Any) -> list[dict[str, Any]]:
    """String content == one text block; adjacent text blocks joined; cache_control dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content != "" else []
    blocks: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, str):
            b = {"type": "text", "text": b}
        b = strip_cache_control(b)
        if b.get("type") == "text" and blocks and blocks[-1].get("type") == "text":
            blocks[-1] = {"type": "text", "text": blocks[-1]["text"] + b.get("text", "")}
        else:
            blocks.append(b)
    return blocks


def message_hash(message: Message) -> str:
    """Storage key of an internal-shape message (sha256 of its canonical JSON)."""
    canon = {"role": message.get("role"), "content": normalize_blocks(message.get("content"))}
    return hashlib.sha256(dumps_canonical(canon)).hexdigest()
