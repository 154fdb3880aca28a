"""Replay a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`).

One record per line: `{"timestamp", "type", "payload"}` with types `session_meta` (first line:
thread id, `session_id`, `cli_version`, `base_instructions`, and for a sub-agent thread
`parent_thread_id` + `source.subagent`), `response_item` (a Responses API item exactly as it was
sent or received), `turn_context`, `event_msg`, `token_usage_record` (written after each model
response, with its `response_id` and usage), `compacted` (after a compaction: the summary
`message` and the `replacement_history` the next requests start from) and others this reader
does not need.

Replay (what Codex sends, checked against recordings of the same runs in
tests/data/recorded/codex-<version>): a request is the base instructions (as `session_meta`
keeps them; the text sent can be shorter, Codex drops sections about tools it did not offer,
e.g. `## Planning`), then every response item so far (`replacement_history` after a
compaction). Where the base instructions go depends on the release that wrote the rollout
(`session_meta.cli_version`, `instructions_layout`): 0.169 and later send them as the first
developer message of `input`; 0.160 sends them in the request's `instructions` field, so the
replayed call has them as its system text and its messages start at the first response item
(a missing or unreadable version takes the later layout). The items between one model
response's start and its `token_usage_record` are that response. A response whose id a later
`compacted` record names is the compaction call: its request is the history plus Codex's
compaction prompt (not written down; its fixed first sentence stands in, marked
`synthetic_request`). Every thread file of one session (main and sub-agents) shares the
session's episode; sub-agent calls are recognised later the way wire calls are (their first
user text is a parent's `spawn_agent` message). Retries and failed requests never reach a
rollout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawviz.ingest.exchange import group_responses_items, responses_group_message
from clawviz.ingest.transcripts.common import (
    Line,
    Reject,
    TranscriptRead,
    parse_time,
    transcript_call,
    usage_of,
)
from clawviz.types import Call, Message

FORMAT = "transcript_codex"
_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens", "")
"""Where Codex keeps the usage counts (`common.usage_of`; it logs no cache writes)."""
HARNESS_EVIDENCE = "Codex rollout format (session_meta / response_item records)"

COMPACTION_PROMPT = (
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another "
    "LLM that will resume the task."
)
"""The first sentences of Codex's compaction prompt (the rest is not in the rollout)."""

MESSAGE_LAYOUT_SINCE = (0, 169)
"""The first release known to send the base instructions as the first developer message of
`input` (recorded: 0.169.1, 0.171.0); older ones send them in `instructions` (recorded: 0.160.0;
0.161-0.168 are not recorded and taken to be like 0.160)."""

_ASSISTANT_ITEMS = {
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "reasoning",
    "web_search_call",
    "tool_search_call",
}
_RECORD_TYPES = {
    "session_meta",
    "response_item",
    "turn_context",
    "event_msg",
    "compacted",
    "token_usage_record",
    "world_state",
}


def looks_like_codex(records: list[dict[str, Any]]) -> bool:
    """True when the records are Codex rollout lines (typed records with a payload)."""
    for r in records[:5]:
        if r.get("type") == "session_meta" and isinstance(r.get("payload"), dict):
            p = r["payload"]
            if "cli_version" in p or "originator" in p:
                return True
    typed = [r for r in records[:50] if r.get("type") in _RECORD_TYPES and "payload" in r]
    return bool(typed) and any(r.get("type") == "response_item" for r in typed)


def _release(version: Any) -> tuple[int, ...] | None:
    """`cli_version` as numbers (`0.160.0` -> (0, 160, 0)); None when it is missing, not a
    plain dotted release, or a source build's `0.0.0`."""
    if not isinstance(version, str):
        return None
    parts = version.strip().split("-")[0].split(".")
    if not all(p.isdigit() for p in parts) or not any(int(p) for p in parts):
        return None
    return tuple(int(p) for p in parts)


def instructions_layout(meta: dict[str, Any]) -> str:
    """Where the release that wrote this rollout put its base instructions in a request:
    `"field"` (the request's `instructions`, before `MESSAGE_LAYOUT_SINCE`) or `"message"` (a
    first developer message of `input`; also for a missing or unknown version)."""
    release = _release(meta.get("cli_version"))
    if release is not None and release < MESSAGE_LAYOUT_SINCE:
        return "field"
    return "message"


def _is_response_side(item: dict[str, Any]) -> bool:
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in _ASSISTANT_ITEMS


def _clean(item: dict[str, Any]) -> dict[str, Any]:
    """The item as it went over the wire (rollout-only bookkeeping removed)."""
    return {k: v for k, v in item.items() if not k.startswith("internal_")}


def _messages(items: list[dict[str, Any]]) -> list[Message]:
    return [responses_group_message(g) for g in group_responses_items(items)]


def _compact(
    history: list[dict[str, Any]],
    head: list[dict[str, Any]],
    payload: dict[str, Any],
    line: int,
    notes: list[str],
) -> None:
    """A `compacted` record: the history becomes the head plus its replacement history."""
    replacement = payload.get("replacement_history")
    if isinstance(replacement, list):
        history[:] = list(head) + [_clean(i) for i in replacement if isinstance(i, dict)]
    else:
        notes.append(f"line {line}: compaction without replacement_history")


def _extra(
    meta: dict[str, Any], thread_id: str, response_id: str, compaction: bool, is_sub: bool
) -> dict[str, Any]:
    """The `extra` of a replayed call: where it came from in the rollout."""
    extra: dict[str, Any] = {
        "transcript_format": FORMAT,
        "thread_id": thread_id,
        "transcript_role": "compaction_summary"
        if compaction
        else ("subagent" if is_sub else "main"),
        "response_id": response_id or None,
        "cli_version": meta.get("cli_version"),
    }
    if compaction:
        extra["synthetic_request"] = True
    if is_sub:
        extra["parent_thread_id"] = meta.get("parent_thread_id")
    return extra


def _split_meta(lines: list[Line], rejects: list[Reject]) -> tuple[dict[str, Any], list[Line]]:
    """The rollout's session_meta payload and its other lines; a line without type and
    payload becomes a reject."""
    meta: dict[str, Any] = {}
    body: list[Line] = []
    for ln in lines:
        r = ln.record
        if not isinstance(r.get("type"), str) or "payload" not in r:
            rejects.append((ln.number, "rollout line without type and payload", ln.raw))
        elif r["type"] == "session_meta" and not meta and isinstance(r["payload"], dict):
            meta = r["payload"]
        else:
            body.append(ln)
    return meta, body


def read_codex(path: str | Path, lines: list[Line], rejects: list[Reject]) -> TranscriptRead:
    """Replay one rollout file into calls (one per model response, compaction included)."""
    path = str(path)
    rejects = list(rejects)
    notes: list[str] = []
    meta, body = _split_meta(lines, rejects)
    thread_id = str(meta.get("id") or Path(path).stem)
    episode_id = str(meta.get("session_id") or meta.get("parent_thread_id") or thread_id)
    base_raw = meta.get("base_instructions")
    base = base_raw.get("text") if isinstance(base_raw, dict) else None
    base = base if isinstance(base, str) and base else None
    system = ""
    head: list[dict[str, Any]] = []
    if base and instructions_layout(meta) == "field":
        system = base
    elif base:
        head = [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": base}],
            }
        ]
    history: list[dict[str, Any]] = list(head)
    compacted_ids = {
        str(ln.record["payload"].get("compaction_response_id"))
        for ln in body
        if ln.record["type"] == "compacted" and isinstance(ln.record["payload"], dict)
    }
    is_sub = bool(meta.get("parent_thread_id"))
    calls: list[Call] = []
    pending: list[dict[str, Any]] = []
    start_line: int | None = None
    t_before: float | None = parse_time(meta.get("timestamp"))
    model: str | None = None

    def emit(ln: Line, usage_rec: dict[str, Any] | None) -> None:
        nonlocal pending, start_line
        response_id = str((usage_rec or {}).get("response_id", ""))
        compaction = response_id in compacted_ids
        request = list(history)
        if compaction:
            prompt = {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": COMPACTION_PROMPT}],
            }
            request.append(prompt)
        u = (usage_rec or {}).get("usage") or {}
        t_resp = parse_time(ln.record.get("timestamp"))
        extra = _extra(meta, thread_id, response_id, compaction, is_sub)
        calls.append(
            transcript_call(
                call_id=f"{thread_id}:L{start_line or ln.number}",
                source_file=path,
                line=start_line or ln.number,
                endpoint="openai_responses",
                seq=len(calls),
                t_request=t_before,
                t_response=t_resp,
                episode_id=episode_id,
                harness="codex",
                model=model,
                system=system,
                messages=_messages(request),
                response=responses_group_message(pending) if pending else None,
                usage=usage_of(u, _USAGE_KEYS),
                extra=extra,
            )
        )
        if not compaction:
            history.extend(pending)
        pending, start_line = [], None

    for ln in body:
        r, p = ln.record, ln.record["payload"]
        kind = r["type"]
        if not isinstance(p, dict):
            continue
        if kind == "turn_context" and p.get("model"):
            model = str(p["model"])
        if kind == "response_item":
            item = _clean(p)
            if _is_response_side(item):
                start_line = ln.number if start_line is None else start_line
                pending.append(item)
                continue
            if pending:
                notes.append(f"line {ln.number}: response without a token usage record")
                emit(ln, None)
            history.append(item)
        elif kind == "token_usage_record":
            if pending:
                emit(ln, p)
        elif kind == "compacted":
            _compact(history, head, p, ln.number, notes)
        else:
            continue
        t_before = parse_time(r.get("timestamp"))
    if pending:
        emit(body[-1], None)
    for call in calls:
        call.extra["harness_evidence"] = HARNESS_EVIDENCE
    return TranscriptRead(
        calls=calls,
        rejects=sorted(rejects, key=lambda x: x[0]),
        format=FORMAT,
        harness="codex",
        harness_evidence=HARNESS_EVIDENCE,
        episode_id=episode_id,
        notes=notes,
    )


# The Format interface of this module (clawviz.ingest.formats).
NAME = FORMAT
detect = looks_like_codex
read = read_codex
