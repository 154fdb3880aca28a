"""Canonical forms of messages (FORMATS §2), used for storage keys and for tree matching.

Two levels: `message_hash` keys the content-addressed store (exact internal-shape content, with
cache_control and string-vs-block differences removed); `match_key` is the tolerant key the tree
builder compares (see its docstring).
"""

from __future__ import annotations

import hashlib
import re
import re._parser as _sre_parse  # type: ignore[import-not-found]  # stdlib regex parser (3.11+)
from collections.abc import Iterable, Sequence
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


def normalize_ws(text: str) -> str:
    """Collapse every whitespace run to one space and strip the ends."""
    return " ".join(text.split())


_ASCII_WS = b" \t\n\r\f\v"


def squeeze_ws(text: str) -> str:
    """Remove all ASCII whitespace (matching only: ten times faster than collapsing runs)."""
    # Deleting bytes is twice as fast as str.translate; ASCII bytes never occur inside a
    # UTF-8 multi-byte sequence, so the result is the same string.
    raw = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_WS)
    return raw.decode("utf-8", "surrogatepass")


def block_text(content: Any) -> str:
    """Plain text of a content value (string, block list or tool_result content)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text", ""))
    parts: list[str] = []
    for b in content:
        if isinstance(b, str):
            parts.append(b)
        elif isinstance(b, dict) and b.get("type") in (None, "text", "input_text", "output_text"):
            parts.append(str(b.get("text", "")))
    return "".join(parts)


_PREFIXES: dict[int, tuple[re.Pattern[str], str]] = {}
"""`_literal_prefix` by id(pattern), the pattern kept alive beside it (hashing a compiled
pattern hashes its whole program: the marker checks ask thousands of times per episode)."""


def _literal_prefix(pattern: re.Pattern[str]) -> str:
    """The literal text every match of `pattern` starts with ('' if none)."""
    got = _PREFIXES.get(id(pattern))
    if got is not None and got[0] is pattern:
        return got[1]
    if len(_PREFIXES) >= 4096:
        _PREFIXES.clear()
    prefix = _parsed_literal_prefix(pattern)
    _PREFIXES[id(pattern)] = (pattern, prefix)
    return prefix


_PAIRS: dict[int, tuple[tuple[re.Pattern[str], ...], tuple[tuple[re.Pattern[str], str], ...]]] = {}
"""`with_prefixes` by id(tuple of patterns), the tuple kept alive beside it."""


def with_prefixes(patterns: Iterable[re.Pattern[str]]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """Each pattern with its `_literal_prefix`; memoised for tuples (the marker and ignore
    pattern tuples are module constants, looked through for every message)."""
    if type(patterns) is not tuple:
        return tuple((p, _literal_prefix(p)) for p in patterns)
    got = _PAIRS.get(id(patterns))
    if got is not None and got[0] is patterns:
        return got[1]
    if len(_PAIRS) >= 4096:
        _PAIRS.clear()
    pairs = tuple((p, _literal_prefix(p)) for p in patterns)
    _PAIRS[id(patterns)] = (patterns, pairs)
    return pairs


def _parsed_literal_prefix(pattern: re.Pattern[str]) -> str:
    """The literal text every match of `pattern` starts with ('' if none).

    Read from the parsed pattern: zero-width assertions at its start (`^`, `(?m)^`, `\\b`) are
    passed over, then its literal characters are taken up to the first other element (a
    group, a class, a repeat: `ab*` gives `a`, since the repeat is its own element)."""
    if pattern.flags & re.IGNORECASE:
        return ""
    try:
        parsed = _sre_parse.parse(pattern.pattern, pattern.flags & ~re.DEBUG)
    except Exception:  # noqa: BLE001 (compiled already; a parser change only loses the shortcut)
        return ""
    out: list[str] = []
    for op, av in parsed:
        if op is _sre_parse.AT and not out:
            continue
        if op is not _sre_parse.LITERAL:
            break
        out.append(chr(av))
    return "".join(out)


def strip_patterns(text: str, patterns: Sequence[re.Pattern[str]]) -> str:
    """Remove every match of `patterns` (a literal pre-check skips the regex on most texts).

    Each pattern is applied until it no longer matches, so a pattern written for the innermost
    of nested spans removes the outer ones too (Claude Code nests `<system-reminder>` blocks).
    """
    for p, prefix in with_prefixes(patterns):
        while not prefix or prefix in text:
            stripped = p.sub("", text)
            if stripped == text:
                break
            text = stripped
    return text


def _canonical_args(value: Any) -> Any:
    # Harnesses send tool arguments as an object or as a JSON string; both mean the same call.
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _image_digest(block: dict[str, Any]) -> str:
    source = block.get("source") or block.get("image_url") or {}
    return hashlib.sha256(dumps_canonical(strip_cache_control(source))).hexdigest()[:16]


def match_items(message: Message, *, ignore_patterns: Sequence[re.Pattern[str]] = ()) -> list:
    """The tolerant, comparable content of a message (see `match_key`)."""
    items: list[Any] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            text = squeeze_ws("".join(pending))
            if text:
                items.append(("text", text))
            pending.clear()

    content = message.get("content")
    if content is None:
        content = []
    elif isinstance(content, dict):
        content = [content]
    elif not isinstance(content, list):
        content = [str(content)]
    # Blocks are read field by field, so cache_control never needs stripping here.
    for b in content:
        if not isinstance(b, dict):
            b = {"type": "text", "text": str(b)}
        kind = b.get("type")
        if kind in ("thinking", "redacted_thinking", "reasoning"):
            continue
        if kind in ("text", "input_text", "output_text"):
            pending.append(strip_patterns(str(b.get("text", "")), ignore_patterns))
            continue
        flush()
        if kind == "tool_use":
            items.append(("tool_use", b.get("name"), _canonical_args(b.get("input"))))
        elif kind == "tool_result":
            text = squeeze_ws(strip_patterns(block_text(b.get("content")), ignore_patterns))
            items.append(("tool_result", text, bool(b.get("is_error"))))
        elif kind == "image":
            items.append(("image", _image_digest(b)))
        else:
            rest = {k: v for k, v in b.items() if k not in ("id", "signature", "cache_control")}
            items.append(("other", strip_cache_control(rest)))
    flush()
    return items


def match_key(message: Message, *, ignore_patterns: Sequence[re.Pattern[str]] = ()) -> str:
    """Tolerant key for tree matching.

    Thinking dropped, text stripped of `ignore_patterns` and of all whitespace, tool calls
    compared by name + canonical arguments (ids ignored: OpenClaw rewrites them), tool results
    by text + is_error, images by a digest of their source.
    """
    role = message.get("role")
    if role == "tool":
        role = "user"
    items = match_items(message, ignore_patterns=ignore_patterns)
    digest = hashlib.blake2b(dumps_canonical([role, items]), digest_size=16)
    return digest.hexdigest()
