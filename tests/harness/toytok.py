"""A deterministic toy tokenizer so token ids agree across calls (vLLM-style rollouts).

A request renders message by message; each message renders to the same ids wherever it appears,
and an assistant reply's output ids are exactly what its message renders to (after the header)
when it comes back in the next request. So call n+1's prompt ids start with call n's prompt ids
followed by call n's output ids, as with a real chat template.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from typing import Any

SPECIAL = {"<|system|>": 1, "<|user|>": 2, "<|assistant|>": 3, "<|tool|>": 4, "<|end|>": 5}
_PIECE = re.compile(r"\w+|\s+|[^\w\s]")


def tokenize(text: str) -> list[int]:
    return [100 + zlib.crc32(p.encode()) % 50000 for p in _PIECE.findall(text or "")]


def pieces(text: str) -> list[str]:
    return _PIECE.findall(text or "")


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return json.dumps(content, sort_keys=True)


def tool_call_text(name: str, arguments: str) -> str:
    return f"<tool_call>{name} {arguments}</tool_call>"


def assistant_body_ids(text: str | None, tool_calls: list[tuple[str, str]]) -> list[int]:
    ids = tokenize(text or "")
    for name, args in tool_calls:
        ids += tokenize(tool_call_text(name, args))
    return ids + [SPECIAL["<|end|>"]]


def chat_prompt_ids(messages: list[dict[str, Any]]) -> list[int]:
    """Render Chat Completions messages and add the generation header."""
    ids: list[int] = []
    for m in messages:
        role = m.get("role", "user")
        if role == "assistant":
            calls = [
                (
                    (c.get("function") or {}).get("name", ""),
                    (c.get("function") or {}).get("arguments", ""),
                )
                for c in m.get("tool_calls") or []
            ]
            ids += [SPECIAL["<|assistant|>"]] + assistant_body_ids(
                _content_text(m.get("content")), calls
            )
            continue
        head = SPECIAL.get(f"<|{'system' if role == 'developer' else role}|>", 2)
        ids += [head] + tokenize(_content_text(m.get("content"))) + [SPECIAL["<|end|>"]]
    return ids + [SPECIAL["<|assistant|>"]]


def count_tokens(obj: Any) -> int:
    """A rough count for non-chat protocols (usage fields, count_tokens)."""
    return max(1, len(tokenize(json.dumps(obj, sort_keys=True))) // 3)


def logprob(i: int) -> float:
    """A deterministic, plausible log-probability for output position i."""
    return round(-0.02 - 0.3 * abs(math.sin(i * 1.7)), 6)
