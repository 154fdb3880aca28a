"""Replay a Claude Code project transcript (`~/.claude/projects/<cwd>/<session>.jsonl`) into calls.

One call per API response: the per-block assistant records sharing `message.id` are joined, and
the request is the `parentUuid` chain up to the response's first record (consecutive user records
joined into one message, as Claude Code sends them). Rewinds (siblings under one parent) become
branches by themselves. A `compact_boundary` ends a chain; the `isCompactSummary` user record
starts the next segment, and a summary call is rebuilt at the boundary. Sub-agents come from
inline `isSidechain` records, from `<session>/subagents/agent-<id>.jsonl` (+ `.meta.json`) and,
in the older layout, from `agent-<id>.jsonl` beside the session file whose records carry that
session's `sessionId`; all are linked to the parent's `Task` / `Agent` tool_use.

Transcripts hold no system prompt. Calls get a one-line system marker (`MAIN_SYSTEM_MARKER` or
`SUBAGENT_SYSTEM_MARKER`, FORMATS §3) because classification tells main from sub-agent threads
by system text; `extra["system_synthetic"]` says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawviz.ingest.transcripts.common import (
    Line,
    Reject,
    TranscriptRead,
    parse_time,
    read_lines,
    text_of,
)
from clawviz.types import Call, Message, Usage

FORMAT = "transcript_claude_code"
MAIN_SYSTEM_MARKER = "You are Claude Code, Anthropic's official CLI for Claude."
SUBAGENT_SYSTEM_MARKER = "You are an agent for Claude Code, Anthropic's official CLI for Claude."
COMPACT_PROMPT_OPENING = (
    "Your task is to create a detailed summary of the conversation so far, paying close "
    "attention to the user's explicit requests and your previous actions."
)
COMPACT_PROMPT_CLOSING = (
    "IMPORTANT: Do NOT use any tools. You MUST respond with ONLY the <summary>...</summary> "
    "block as your text output."
)
COMPACT_PROMPT = COMPACT_PROMPT_OPENING + "\n\n" + COMPACT_PROMPT_CLOSING
"""Claude Code's compaction prompt as far as it is documented: its first and last sentences.

The middle (the section-by-section instructions) is neither in the transcript nor in our
reference notes, so the rebuilt request carries only the documented opening and closing.
"""
CONTINUATION_PREFIXES = (
    "This session is being continued from a previous conversation that ran out of context.",
    "The conversation is summarized below:",
    "The summary below covers the earlier portion of the conversation.",
)
SPAWN_TOOLS = ("Task", "Agent")
_RECORD_TYPES = {"user", "assistant", "system", "summary"}


def looks_like_claude_code(records: list[dict[str, Any]]) -> bool:
    """True when the records are Claude Code transcript records (uuid chain, typed messages)."""
    for r in records:
        if "request" in r or r.get("type") not in _RECORD_TYPES:
            continue
        if "uuid" in r or "parentUuid" in r or "sessionId" in r or "leafUuid" in r:
            return True
    return False


@dataclass
class _Rec:
    """One transcript record in the uuid graph."""

    uuid: str
    parent: str | None
    line: int
    file: str
    order: int
    record: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.record.get("type", ""))

    @property
    def sidechain(self) -> bool:
        return bool(self.record.get("isSidechain"))

    @property
    def msg(self) -> dict[str, Any]:
        m = self.record.get("message")
        return m if isinstance(m, dict) else {}

    @property
    def is_boundary(self) -> bool:
        return self.type == "system" and self.record.get("subtype") == "compact_boundary"

    @property
    def is_api_error(self) -> bool:
        return bool(self.record.get("isApiErrorMessage"))

    @property
    def is_synthetic(self) -> bool:
        """Assistant text Claude Code wrote itself (errors, interruptions), never sent back."""
        return self.type == "assistant" and (
            self.is_api_error or self.msg.get("model") == "<synthetic>"
        )


@dataclass
class _SubFile:
    """A sub-agent file and its meta (`agentType`, `description`, `toolUseId`)."""

    path: str
    agent_id: str
    meta: dict[str, Any] = field(default_factory=dict)


def _invalid_reason(r: dict[str, Any]) -> str | None:
    t = r.get("type")
    if t not in ("user", "assistant"):
        return None
    if not isinstance(r.get("uuid"), str):
        return f"{t} record without uuid"
    m = r.get("message")
    if not isinstance(m, dict):
        return f"{t} record without a message object"
    if t == "assistant" and not isinstance(m.get("content"), list):
        return "assistant message content is not a list of blocks"
    if t == "user" and not isinstance(m.get("content"), (str, list)):
        return "user message without content"
    return None


def _blocks(content: Any) -> list[dict[str, Any]]:
    """Anthropic content as internal blocks (signatures and null fields dropped)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for b in content or []:
        if isinstance(b, str):
            out.append({"type": "text", "text": b})
            continue
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            out.append({"type": "text", "text": str(b.get("text") or "")})
        elif t == "thinking":
            out.append({"type": "thinking", "thinking": str(b.get("thinking") or "")})
        elif t == "redacted_thinking":
            out.append({"type": "redacted_thinking"})
        elif t == "tool_use":
            out.append(
                {
                    "type": "tool_use",
                    "id": str(b.get("id", "")),
                    "name": str(b.get("name", "")),
                    "input": b.get("input") if b.get("input") is not None else {},
                }
            )
        elif t == "tool_result":
            c = b.get("content")
            text = c if isinstance(c, str) else text_of(c)
            out.append(
                {
                    "type": "tool_result",
                    "tool_use_id": str(b.get("tool_use_id", "")),
                    "content": text,
                    "is_error": bool(b.get("is_error")),
                }
            )
        else:
            out.append({k: v for k, v in b.items() if k != "cache_control"})
    return out


def read_claude_code(path: str | Path, lines: list[Line], rejects: list[Reject]) -> TranscriptRead:
    """Replay one Claude Code session file, with its sub-agent files, into calls."""
    p = Path(path)
    parent_file = _session_file_of(p)
    if parent_file is not None:
        return TranscriptRead(
            calls=[],
            rejects=[],
            format=FORMAT,
            harness="claude-code",
            covered_by=str(parent_file),
            notes=[f"read with its session file {parent_file}"],
        )
    graph = _Graph()
    graph.add_file(str(p), lines, rejects)
    read = TranscriptRead(calls=[], rejects=[], format=FORMAT, harness="claude-code")
    own_meta = _meta_for(p)
    if own_meta is not None:
        graph.sub_files[str(p)] = own_meta
    for sub in _agent_files_of(p):
        sub_lines, sub_rejects = read_lines(sub)
        graph.add_file(str(sub), sub_lines, sub_rejects)
        graph.sub_files[str(sub)] = _meta_for(sub) or _SubFile(str(sub), sub.stem[6:])
        read.extra_files.append(str(sub))
    episode_id = graph.session_id or p.stem
    calls = _Replay(graph, episode_id).run()
    read.calls = calls
    read.episode_id = episode_id
    read.rejects = sorted(graph.rejects.get(str(p), []))
    read.rejects_by_file = {f: sorted(r) for f, r in graph.rejects.items() if f != str(p) and r}
    read.notes = graph.notes
    return read


def _session_file_of(p: Path) -> Path | None:
    """The session file that reads this sub-agent file with it, when `p` is one and it exists.

    Newer layout: `<session>/subagents/agent-<id>.jsonl`. Older layout: `agent-<id>.jsonl` next
    to `<session>.jsonl`, its records carrying the parent's `sessionId`. `_agent_files_of` is
    the inverse and must pick the same files, or calls would be lost or read twice.
    """
    if not p.name.startswith("agent-"):
        return None
    if p.parent.name == "subagents":
        parent = p.parent.parent.with_suffix(".jsonl")
        return parent if parent.is_file() else None
    sid = _head_session_id(p)
    parent = p.parent / f"{sid}.jsonl" if sid else None
    return parent if parent is not None and parent.is_file() and parent != p else None


def _agent_files_of(session_file: Path) -> list[Path]:
    """Sub-agent files read with a session file, in both layouts (see `_session_file_of`)."""
    if session_file.name.startswith("agent-"):
        return []
    out: list[Path] = []
    sub_dir = session_file.with_suffix("") / "subagents"
    if sub_dir.is_dir():
        out.extend(sorted(sub_dir.glob("agent-*.jsonl")))
    # Older layout: only siblings that name this file's session (a folder holds many sessions).
    out.extend(_flat_agent_index(session_file.parent).get(session_file.stem, []))
    return out


_FLAT_INDEX: dict[str, tuple[int, dict[str, list[Path]]]] = {}


def _flat_agent_index(folder: Path) -> dict[str, list[Path]]:
    """sessionId -> the `agent-*.jsonl` files in `folder` that name it (kept per folder state)."""
    try:
        mtime = folder.stat().st_mtime_ns
    except OSError:
        return {}
    key = str(folder)  # as given: the paths returned are built on it
    cached = _FLAT_INDEX.get(key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    index: dict[str, list[Path]] = {}
    for agent_file in sorted(folder.glob("agent-*.jsonl")):
        sid = _head_session_id(agent_file)
        if sid is not None:
            index.setdefault(sid, []).append(agent_file)
    if len(_FLAT_INDEX) > 64:
        _FLAT_INDEX.clear()
    _FLAT_INDEX[key] = (mtime, index)
    return index


def _head_session_id(path: Path, max_lines: int = 20) -> str | None:
    """The first `sessionId` among a file's first lines, without reading the whole file."""
    try:
        with path.open("rb") as fh:
            for _, raw in zip(range(max_lines), fh, strict=False):
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                sid = record.get("sessionId") if isinstance(record, dict) else None
                if isinstance(sid, str) and sid:
                    return sid
    except OSError:
        return None
    return None


def _meta_for(agent_file: Path) -> _SubFile | None:
    """The sub-agent description of `agent-<id>.jsonl`, when the file is one."""
    if not agent_file.name.startswith("agent-"):
        return None
    meta_path = agent_file.with_suffix(".meta.json")
    meta: dict[str, Any] = {}
    if meta_path.is_file():
        try:
            loaded = json.loads(meta_path.read_text(encoding="utf-8"))
            meta = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            meta = {}
    return _SubFile(str(agent_file), agent_file.stem[len("agent-") :], meta)


class _Graph:
    """All records of the files read, by uuid, with rejects per file."""

    def __init__(self) -> None:
        self.by_uuid: dict[str, _Rec] = {}
        self.records: list[_Rec] = []
        self.rejects: dict[str, list[Reject]] = {}
        self.notes: list[str] = []
        self.sub_files: dict[str, _SubFile] = {}
        self.session_id: str | None = None

    def add_file(self, path: str, lines: list[Line], rejects: list[Reject]) -> None:
        bad = self.rejects.setdefault(path, [])
        bad.extend(rejects)
        for ln in lines:
            reason = _invalid_reason(ln.record)
            if reason:
                bad.append((ln.number, reason, ln.raw))
                continue
            uuid = ln.record.get("uuid")
            if not isinstance(uuid, str):
                continue
            if self.session_id is None and isinstance(ln.record.get("sessionId"), str):
                self.session_id = ln.record["sessionId"]
            parent = ln.record.get("parentUuid")
            rec = _Rec(
                uuid,
                parent if isinstance(parent, str) else None,
                ln.number,
                path,
                len(self.records),
                ln.record,
            )
            if uuid in self.by_uuid:
                bad.append((ln.number, f"duplicate uuid {uuid!r}", ln.raw))
                continue
            self.by_uuid[uuid] = rec
            self.records.append(rec)

    def path(self, leaf: _Rec | None) -> list[_Rec]:
        """Records from the chain's start (root or compact boundary) to `leaf`."""
        out: list[_Rec] = []
        seen: set[str] = set()
        current = leaf
        sidechain = leaf.sidechain if leaf else False
        while current is not None and current.uuid not in seen:
            if sidechain and not current.sidechain:
                break  # a sub-agent's chain may hang off the main chain; its request does not
            seen.add(current.uuid)
            out.append(current)
            if current.is_boundary:
                break
            current = self.by_uuid.get(current.parent) if current.parent else None
        out.reverse()
        return out


def _messages(path: list[_Rec]) -> list[Message]:
    """The API messages of a chain: user records joined, a response's blocks joined."""
    out: list[Message] = []
    last_key: str | None = None
    for rec in path:
        if rec.type == "user":
            blocks = _blocks(rec.msg.get("content"))
            if out and out[-1]["role"] == "user":
                out[-1] = {"role": "user", "content": out[-1]["content"] + blocks}
            else:
                out.append({"role": "user", "content": blocks})
            last_key = None
        elif rec.type == "assistant" and not rec.is_synthetic:
            key = rec.msg.get("id") or rec.uuid
            blocks = _blocks(rec.msg.get("content"))
            if out and out[-1]["role"] == "assistant" and last_key == key:
                out[-1] = {"role": "assistant", "content": out[-1]["content"] + blocks}
            else:
                out.append({"role": "assistant", "content": blocks})
            last_key = key
    return out


def _summary_body(text: str) -> str:
    """The summary inside Claude Code's continuation message (its fixed lead-in removed)."""
    body = text.strip()
    changed = True
    while changed:
        changed = False
        for prefix in CONTINUATION_PREFIXES:
            if body.startswith(prefix):
                body = body[len(prefix) :].lstrip()
                changed = True
    return body


@dataclass
class _Spawn:
    """A Task / Agent tool_use in some response: who spawned which prompt."""

    tool_use_id: str
    call_id: str
    prompt: str
    agent_type: str | None
    description: str | None
    used: bool = False


class _Replay:
    """Turns the record graph into calls."""

    def __init__(self, graph: _Graph, episode_id: str) -> None:
        self.g = graph
        self.episode_id = episode_id
        self.calls: list[Call] = []
        self.spawns: dict[str, _Spawn] = {}
        self._agents: dict[str, str] = {}
        self._segments: dict[str, int] = {}
        self.group_ids: dict[str, str] = {}

    def _call_id(self, group: list[_Rec]) -> str:
        """The response's message.id: the same API call read from a copied file keeps its id."""
        return self.group_ids[group[0].uuid]

    def _groups(self) -> list[list[_Rec]]:
        """Assistant records of one response (same message.id, chained), in file order."""
        groups: list[list[_Rec]] = []
        by_key: dict[str, list[list[_Rec]]] = {}
        for rec in self.g.records:
            if rec.type != "assistant":
                continue
            if rec.is_synthetic and not rec.is_api_error:
                continue
            key = str(rec.msg.get("id") or rec.uuid)
            same = by_key.setdefault(key, [])
            group = next((g for g in same if rec.parent in {r.uuid for r in g}), None)
            if group is None:
                group = [rec]
                # A message.id seen on another chain (a copied response) gets its own call.
                suffix = f"#{len(same) + 1}" if same else ""
                self.group_ids[rec.uuid] = f"{self.episode_id}:{key}{suffix}"
                same.append(group)
                groups.append(group)
            else:
                group.append(rec)
        return groups

    def run(self) -> list[Call]:
        groups = self._groups()
        for group in groups:
            self._index_spawns(group)
        self._agents = self._agent_tool_use()
        for group in groups:
            self._response_call(group)
        for rec in self.g.records:
            if rec.is_boundary:
                self._compaction_call(rec)
        self.calls.sort(key=lambda c: (c.t_request is None, c.t_request or 0.0))
        for i, call in enumerate(self.calls):
            call.seq = i
        return self.calls

    def _segment(self, path: list[_Rec]) -> int:
        """How many compact boundaries lie behind a chain (0 for the first segment)."""
        boundary = path[0] if path and path[0].is_boundary else None
        if boundary is None:
            return 0
        if boundary.uuid not in self._segments:
            self._segments[boundary.uuid] = 0
            tip_uuid = boundary.record.get("logicalParentUuid")
            tip = self.g.by_uuid.get(tip_uuid) if isinstance(tip_uuid, str) else None
            self._segments[boundary.uuid] = 1 + self._segment(self.g.path(tip))
        return self._segments[boundary.uuid]

    def _index_spawns(self, group: list[_Rec]) -> None:
        call_id = self._call_id(group)
        for rec in group:
            for b in rec.msg.get("content") or []:
                if not isinstance(b, dict) or b.get("type") != "tool_use":
                    continue
                if b.get("name") not in SPAWN_TOOLS or not isinstance(b.get("input"), dict):
                    continue
                inp = b["input"]
                self.spawns[str(b.get("id"))] = _Spawn(
                    tool_use_id=str(b.get("id")),
                    call_id=call_id,
                    prompt=str(inp.get("prompt", "")),
                    agent_type=inp.get("subagent_type"),
                    description=inp.get("description"),
                )

    def _agent_tool_use(self) -> dict[str, str]:
        """agentId -> tool_use_id, from the parent's tool_result records and meta files."""
        out: dict[str, str] = {}
        for sub in self.g.sub_files.values():
            if isinstance(sub.meta.get("toolUseId"), str):
                out[sub.agent_id] = sub.meta["toolUseId"]
        for rec in self.g.records:
            if rec.type != "user" or rec.sidechain:
                continue
            tur = rec.record.get("toolUseResult")
            agent = rec.record.get("agentId") or (
                tur.get("agentId") if isinstance(tur, dict) else None
            )
            if not isinstance(agent, str):
                continue
            content = rec.msg.get("content")
            for b in content if isinstance(content, list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    out.setdefault(agent, str(b.get("tool_use_id")))
        return out

    def _spawn_for(self, path: list[_Rec], rec: _Rec, first_text: str) -> _Spawn | None:
        """The Task / Agent call that started this sub-agent thread, if it can be found."""
        sub = self.g.sub_files.get(rec.file)
        agent = sub.agent_id if sub else None
        for r in path:
            agent = agent or r.record.get("agentId")
        if isinstance(agent, str) and agent in self._agents:
            spawn = self.spawns.get(self._agents[agent])
            if spawn:
                return spawn
        prompt = first_text.strip()
        for spawn in self.spawns.values():
            if prompt and spawn.prompt.strip() == prompt:
                return spawn
        return None

    def _response_call(self, group: list[_Rec]) -> None:
        first, last = group[0], group[-1]
        parent = self.g.by_uuid.get(first.parent) if first.parent else None
        path = self.g.path(parent)
        messages = _messages(path)
        is_sub = first.sidechain or first.file in self.g.sub_files
        extra: dict[str, Any] = {
            "transcript_format": FORMAT,
            "transcript_role": "subagent" if is_sub else "main",
            "system_synthetic": True,
            "uuids": [r.uuid for r in group],
            "message_id": first.msg.get("id"),
            "request_id": first.record.get("requestId"),
            "version": first.record.get("version"),
            "transcript_segment": self._segment(path),
        }
        if is_sub:
            first_user = next((m for m in messages if m["role"] == "user"), None)
            spawn = self._spawn_for(
                path, first, text_of(first_user["content"]) if first_user else ""
            )
            sub = self.g.sub_files.get(first.file)
            meta = sub.meta if sub else {}
            extra.update(
                parent_tool_use_id=meta.get("toolUseId"),
                agent_type=meta.get("agentType"),
                description=meta.get("description"),
            )
            if spawn:
                extra.update(
                    spawned_by_call=spawn.call_id,
                    parent_tool_use_id=spawn.tool_use_id,
                    agent_type=meta.get("agentType") or spawn.agent_type,
                    description=meta.get("description") or spawn.description,
                )
                if not messages or messages[0]["role"] != "user":
                    # The sub-agent's first request is the Task prompt; old files may omit it.
                    messages = [
                        {"role": "user", "content": [{"type": "text", "text": spawn.prompt}]}
                    ] + messages
            agent = (sub.agent_id if sub else None) or first.record.get("agentId")
            if agent:
                extra["agent_id"] = agent
        blocks: list[dict[str, Any]] = []
        stop_reason = None
        usage: dict[str, Any] = {}
        for rec in group:
            blocks.extend(_blocks(rec.msg.get("content")))
            stop_reason = rec.msg.get("stop_reason") or stop_reason
            if isinstance(rec.msg.get("usage"), dict):
                usage = rec.msg["usage"]
        failure = error = None
        status: int | None = 200
        response: Message | None = {"role": "assistant", "content": blocks}
        if first.is_api_error:
            failure, error, status, response = (
                "failed_http",
                text_of(blocks) or "API error",
                None,
                None,
            )
        t_request = parse_time(parent.record.get("timestamp")) if parent else None
        t_response = parse_time(last.record.get("timestamp"))
        self.calls.append(
            Call(
                call_id=self._call_id(group),
                source_file=first.file,
                line=first.line,
                endpoint="anthropic_messages",
                seq=None,
                t_request=t_request
                if t_request is not None
                else parse_time(first.record.get("timestamp")),
                t_response=t_response,
                http_status=status,
                episode_id=self.episode_id,
                harness="claude-code",
                model=first.msg.get("model") if not first.is_synthetic else None,
                session_id=self.episode_id,
                system=SUBAGENT_SYSTEM_MARKER if is_sub else MAIN_SYSTEM_MARKER,
                messages=messages,
                response=response,
                stop_reason=stop_reason,
                usage=Usage(
                    input_tokens=usage.get("input_tokens"),
                    output_tokens=usage.get("output_tokens"),
                    cache_read_input_tokens=usage.get("cache_read_input_tokens"),
                    cache_creation_input_tokens=usage.get("cache_creation_input_tokens"),
                ),
                failure=failure,  # type: ignore[arg-type]
                error=error,
                delivered=failure is None,
                source_kind="transcript",
                extra=extra,
            )
        )

    def _compaction_call(self, boundary: _Rec) -> None:
        """Rebuild the summary call a compact boundary stands for: tip + prompt -> summary."""
        summary_rec = next(
            (
                r
                for r in self.g.records
                if r.type == "user"
                and r.record.get("isCompactSummary")
                and r.parent == boundary.uuid
            ),
            None,
        ) or next(
            (
                r
                for r in self.g.records
                if r.type == "user"
                and r.record.get("isCompactSummary")
                and r.file == boundary.file
                and r.order > boundary.order
            ),
            None,
        )
        if summary_rec is None:
            self.g.notes.append(
                f"{boundary.file} line {boundary.line}: compact boundary without a summary record"
            )
            return
        tip_uuid = boundary.record.get("logicalParentUuid")
        tip = self.g.by_uuid.get(tip_uuid) if isinstance(tip_uuid, str) else None
        path = self.g.path(tip)
        messages = _messages(path) + [
            {"role": "user", "content": [{"type": "text", "text": COMPACT_PROMPT}]}
        ]
        model = next(
            (
                r.msg.get("model")
                for r in reversed(path)
                if r.type == "assistant" and not r.is_synthetic
            ),
            None,
        )
        meta = boundary.record.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        summary = _summary_body(text_of(summary_rec.msg.get("content")))
        is_sub = boundary.sidechain or boundary.file in self.g.sub_files
        self.calls.append(
            Call(
                call_id=f"{self.episode_id}:{boundary.uuid}:summary",
                source_file=boundary.file,
                line=boundary.line,
                endpoint="anthropic_messages",
                t_request=parse_time(tip.record.get("timestamp"))
                if tip
                else parse_time(boundary.record.get("timestamp")),
                t_response=parse_time(boundary.record.get("timestamp")),
                http_status=200,
                episode_id=self.episode_id,
                harness="claude-code",
                model=model,
                session_id=self.episode_id,
                system=SUBAGENT_SYSTEM_MARKER if is_sub else MAIN_SYSTEM_MARKER,
                messages=messages,
                response={"role": "assistant", "content": [{"type": "text", "text": summary}]},
                stop_reason="end_turn",
                delivered=True,
                source_kind="transcript",
                extra={
                    "transcript_format": FORMAT,
                    "transcript_role": "compaction_summary",
                    "transcript_segment": self._segment(path),
                    "synthetic_request": True,
                    "system_synthetic": True,
                    "trigger": meta.get("trigger"),
                    "pre_tokens": meta.get("preTokens"),
                    "tip_uuid": tip_uuid,
                    "summary_uuid": summary_rec.uuid,
                },
            )
        )
