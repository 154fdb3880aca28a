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
    summary_call,
    text_of,
    transcript_call,
    usage_of,
)
from clawviz.ingest.transcripts.files import jsonl_files, jsonl_sibling, jsonl_stem, read_head
from clawviz.types import Call, Message

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
HARNESS_EVIDENCE = "Claude Code transcript format (uuid / parentUuid / sessionId records)"
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
        graph.sub_files[str(sub)] = _meta_for(sub) or _SubFile(str(sub), jsonl_stem(sub)[6:])
        read.extra_files.append(str(sub))
    episode_id = graph.session_id or jsonl_stem(p)
    calls = _Replay(graph, episode_id).run()
    read.harness_evidence = HARNESS_EVIDENCE
    for call in calls:
        call.extra["harness_evidence"] = HARNESS_EVIDENCE
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
        session_dir = p.parent.parent
        return jsonl_sibling(session_dir.parent, session_dir.name)
    sid = _head_session_id(p)
    parent = jsonl_sibling(p.parent, sid) if sid else None
    return parent if parent is not None and parent != p else None


def _agent_files_of(session_file: Path) -> list[Path]:
    """Sub-agent files read with a session file, in both layouts (see `_session_file_of`)."""
    if session_file.name.startswith("agent-"):
        return []
    out: list[Path] = []
    sub_dir = session_file.parent / jsonl_stem(session_file) / "subagents"
    if sub_dir.is_dir():
        out.extend(jsonl_files(sub_dir, "agent-"))
    # Older layout: only siblings that name this file's session (a folder holds many sessions).
    out.extend(_flat_agent_index(session_file.parent).get(jsonl_stem(session_file), []))
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
    for agent_file in jsonl_files(folder, "agent-"):
        sid = _head_session_id(agent_file)
        if sid is not None:
            index.setdefault(sid, []).append(agent_file)
    if len(_FLAT_INDEX) > 64:
        _FLAT_INDEX.clear()
    _FLAT_INDEX[key] = (mtime, index)
    return index


def _head_session_id(path: Path, max_lines: int = 20) -> str | None:
    """The first `sessionId` among a file's first lines, without reading the whole file."""
    for raw in read_head(path, max_lines):
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        sid = record.get("sessionId") if isinstance(record, dict) else None
        if isinstance(sid, str) and sid:
            return sid
    return None


def _meta_for(agent_file: Path) -> _SubFile | None:
    """The sub-agent description of `agent-<id>.jsonl`, when the file is one."""
    if not agent_file.name.startswith("agent-"):
        return None
    meta_path = agent_file.parent / f"{jsonl_stem(agent_file)}.meta.json"
    meta: dict[str, Any] = {}
    if meta_path.is_file():
        try:
            loaded = json.loads(meta_path.read_text(encoding="utf-8"))
            meta = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            meta = {}
    return _SubFile(str(agent_file), jsonl_stem(agent_file)[len("agent-") :], meta)


class _Graph:
    """All records of the files read, by uuid, with rejects per file."""

    def __init__(self) -> None:
        self.by_uuid: dict[str, _Rec] = {}
        self.records: list[_Rec] = []
        self.rejects: dict[str, list[Reject]] = {}
        self.notes: list[str] = []
        self.sub_files: dict[str, _SubFile] = {}
        self.session_id: str | None = None
        self.children: dict[str, list[_Rec]] = {}
        self.preserved: dict[str, tuple[str, str]] = {}
        """Anchor uuid -> (head, tail) of the records a partial compaction kept verbatim."""

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
            if rec.parent is not None:
                self.children.setdefault(rec.parent, []).append(rec)
            if rec.is_boundary:
                seg = (rec.record.get("compactMetadata") or {}).get("preservedSegment")
                if isinstance(seg, dict) and all(
                    isinstance(seg.get(k), str) for k in ("anchorUuid", "headUuid", "tailUuid")
                ):
                    self.preserved[seg["anchorUuid"]] = (seg["headUuid"], seg["tailUuid"])

    def _up(self, leaf: _Rec | None, stop: str | None = None) -> list[_Rec]:
        """Records from the chain's start (root, compact boundary or `stop`) to `leaf`."""
        out: list[_Rec] = []
        seen: set[str] = set()
        current = leaf
        sidechain = leaf.sidechain if leaf else False
        while current is not None and current.uuid not in seen:
            if sidechain and not current.sidechain:
                break  # a sub-agent's chain may hang off the main chain; its request does not
            seen.add(current.uuid)
            out.append(current)
            if current.is_boundary or current.uuid == stop:
                break
            current = self.by_uuid.get(current.parent) if current.parent else None
        out.reverse()
        return out

    def path(self, leaf: _Rec | None) -> list[_Rec]:
        """Records from the chain's start (root or compact boundary) to `leaf`, as sent.

        Two things the parent chain alone does not hold are put back. Claude Code 2.1 compacts
        only the head of a conversation: the boundary's `preservedSegment` names the records
        (head to tail) kept verbatim right after the summary record (the anchor). Claude Code
        2.0 hangs the results of parallel tool calls as siblings under the response: the
        results off the chain join the on-chain one, in file order.
        """
        out = self._up(leaf)
        for i, rec in enumerate(out):
            kept = self.preserved.get(rec.uuid)
            if kept is not None:
                head, tail = kept
                segment = self._up(self.by_uuid.get(tail), stop=head)
                if segment and segment[0].uuid == head:
                    out[i + 1 : i + 1] = segment
                break
        return self._with_sibling_results(out)

    def _with_sibling_results(self, path: list[_Rec]) -> list[_Rec]:
        on_path = {r.uuid for r in path}
        have = {
            b.get("tool_use_id")
            for r in path
            if r.type == "user"
            for b in _blocks(r.msg.get("content"))
            if b.get("type") == "tool_result"
        }
        out: list[_Rec] = []
        pending: list[_Rec] = []
        for rec in path:
            if rec.type == "assistant":
                for child in self.children.get(rec.uuid, []):
                    blocks = _blocks(child.msg.get("content"))
                    if (
                        child.uuid not in on_path
                        and child.type == "user"
                        and child.sidechain == rec.sidechain
                        and _only_tool_results(blocks)
                        and not {b.get("tool_use_id") for b in blocks} & have
                    ):
                        pending.append(child)
                        have |= {b.get("tool_use_id") for b in blocks}
                out.append(rec)
            elif (
                rec.type == "user"
                and pending
                and _only_tool_results(_blocks(rec.msg.get("content")))
            ):
                out.extend(sorted([*pending, rec], key=lambda r: r.order))
                pending = []
            else:
                out.append(rec)
        return out


def _only_tool_results(blocks: list[dict[str, Any]]) -> bool:
    return bool(blocks) and all(b.get("type") == "tool_result" for b in blocks)


def _messages(path: list[_Rec]) -> list[Message]:
    """The API messages of a chain: user records joined, a response's blocks joined.

    A response's records may have tool results between them: Claude Code 2.1 writes the result
    of an async Agent call before the response's next tool_use record. Such pieces still make
    one assistant message, followed by one user message with all their results, as sent.
    """
    out: list[Message] = []
    last_key: str | None = None
    for rec in path:
        local = rec.type == "system" and rec.record.get("subtype") == "local_command"
        if rec.type == "user" or local:
            # 2.1 writes a slash command's output as a `system` / `local_command` record; it is
            # sent as user text, as 2.0's `<local-command-stdout>` user record is.
            content = rec.record.get("content") if local else rec.msg.get("content")
            blocks = _blocks(content)
            if out and out[-1]["role"] == "user":
                out[-1] = {"role": "user", "content": out[-1]["content"] + blocks}
            else:
                out.append({"role": "user", "content": blocks})
            if not _only_tool_results(out[-1]["content"]):
                last_key = None
        elif rec.type == "assistant" and not rec.is_api_error:
            # Synthetic replies such as `No response requested.` (after a local command) are
            # sent back; API error messages are not.
            key = rec.msg.get("id") or rec.uuid
            blocks = _blocks(rec.msg.get("content"))
            if out and out[-1]["role"] == "assistant" and last_key == key:
                out[-1] = {"role": "assistant", "content": out[-1]["content"] + blocks}
            elif len(out) > 1 and out[-1]["role"] == "user" and last_key == key:
                # Only tool results since this response's last piece: the piece belongs to it.
                prev = out[-2]
                out[-2] = {"role": "assistant", "content": prev["content"] + blocks}
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


def _response_parts(group: list[_Rec]) -> tuple[list[dict[str, Any]], str | None, dict[str, Any]]:
    """Content blocks, stop reason and usage of one response's records (the last ones win)."""
    blocks: list[dict[str, Any]] = []
    stop_reason = None
    usage: dict[str, Any] = {}
    for rec in group:
        blocks.extend(_blocks(rec.msg.get("content")))
        stop_reason = rec.msg.get("stop_reason") or stop_reason
        if isinstance(rec.msg.get("usage"), dict):
            usage = rec.msg["usage"]
    return blocks, stop_reason, usage


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

    def _piece_of(self, rec: _Rec, same: list[list[_Rec]]) -> list[_Rec] | None:
        """The group `rec` continues: its parent is in it, or only tool results lie between."""
        parent = self.g.by_uuid.get(rec.parent) if rec.parent else None
        while parent is not None and parent.type == "user":
            if not _only_tool_results(_blocks(parent.msg.get("content"))):
                return None
            parent = self.g.by_uuid.get(parent.parent) if parent.parent else None
        if parent is None:
            return None
        return next((g for g in same if parent.uuid in {r.uuid for r in g}), None)

    def _groups(self) -> list[list[_Rec]]:
        """Assistant records of one response (same message.id, chained), in file order.

        A response written again under the same parent (Claude Code 2.0 re-writes the history
        it resumes, keeping one branch of parallel tool calls), or under a re-written tool
        result, is the same API call: its records stay in the chain, but it makes no call.
        """
        groups: list[list[_Rec]] = []
        by_key: dict[str, list[list[_Rec]]] = {}
        rewritten: set[str] = set()
        for rec in self.g.records:
            if rec.type == "user" and rec.parent in rewritten:
                if _only_tool_results(_blocks(rec.msg.get("content"))):
                    rewritten.add(rec.uuid)
                continue
            if rec.type != "assistant":
                continue
            if rec.is_synthetic and not rec.is_api_error:
                continue
            key = str(rec.msg.get("id") or rec.uuid)
            same = by_key.setdefault(key, [])
            group = self._piece_of(rec, same)
            if group is not None:
                group.append(rec)
                if group[0].uuid in rewritten:
                    rewritten.add(rec.uuid)
                continue
            if any(g[0].parent == rec.parent or rec.parent in rewritten for g in same):
                rewritten.add(rec.uuid)
                same.append([rec])
                continue
            group = [rec]
            # A message.id seen on another chain (a copied response) gets its own call.
            suffix = f"#{len(same) + 1}" if same else ""
            self.group_ids[rec.uuid] = f"{self.episode_id}:{key}{suffix}"
            same.append(group)
            groups.append(group)
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
            messages = self._subagent_facts(path, first, messages, extra)
        blocks, stop_reason, usage = _response_parts(group)
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
            transcript_call(
                call_id=self._call_id(group),
                source_file=first.file,
                line=first.line,
                endpoint="anthropic_messages",
                t_request=t_request
                if t_request is not None
                else parse_time(first.record.get("timestamp")),
                t_response=t_response,
                http_status=status,
                episode_id=self.episode_id,
                harness="claude-code",
                model=first.msg.get("model") if not first.is_synthetic else None,
                system=SUBAGENT_SYSTEM_MARKER if is_sub else MAIN_SYSTEM_MARKER,
                messages=messages,
                response=response,
                stop_reason=stop_reason,
                usage=usage_of(usage),
                failure=failure,  # type: ignore[arg-type]
                error=error,
                extra=extra,
            )
        )

    def _subagent_facts(
        self, path: list[_Rec], first: _Rec, messages: list[Message], extra: dict[str, Any]
    ) -> list[Message]:
        """Spawn link and agent facts of a sub-agent call (into `extra`); its messages, with
        the Task prompt first when the file omits it."""
        first_user = next((m for m in messages if m["role"] == "user"), None)
        spawn = self._spawn_for(path, first, text_of(first_user["content"]) if first_user else "")
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
        return messages

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
            summary_call(
                summary=summary,
                call_id=f"{self.episode_id}:{boundary.uuid}:summary",
                source_file=boundary.file,
                line=boundary.line,
                endpoint="anthropic_messages",
                t_request=parse_time(tip.record.get("timestamp"))
                if tip
                else parse_time(boundary.record.get("timestamp")),
                t_response=parse_time(boundary.record.get("timestamp")),
                episode_id=self.episode_id,
                harness="claude-code",
                model=model,
                system=SUBAGENT_SYSTEM_MARKER if is_sub else MAIN_SYSTEM_MARKER,
                messages=messages,
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


# The Format interface of this module (clawviz.ingest.formats).
NAME = FORMAT
detect = looks_like_claude_code
read = read_claude_code
