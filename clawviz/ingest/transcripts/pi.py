"""Replay an OpenClaw / pi session JSONL (pi-mono `session-manager.ts`, v1 and v3) into calls.

Context rules follow pi itself: `buildSessionContext` walks `parentId` from an entry to the root
and keeps, after the latest compaction on that path, the continuation message, the entries from
`firstKeptEntryId` (v1: `firstKeptEntryIndex` into the parsed entries, header = 0) and the rest;
`convertToLlm` turns bashExecution / custom / summaries into user messages; pi-ai's
`transformMessages` drops errored or aborted assistant turns from later requests and adds a
`No result provided` tool result for a tool call that never got one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawviz.ingest import identity
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
from clawviz.ingest.transcripts.links import Links, folder_links, link_name, may_be_linked
from clawviz.types import HIDDEN_MAINTENANCE, Call, Message

FORMAT = "transcript_pi"
_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite")
"""Where pi keeps the four usage counts (`common.usage_of`)."""

# Exact texts of pi-mono (MIT): core/messages.ts and core/compaction/{utils,compaction}.ts.
COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"
SUMMARIZATION_SYSTEM_PROMPT = (
    "You are a context summarization assistant. Your task is to read a conversation between a "
    "user and an AI coding assistant, then produce a structured summary following the exact "
    "format specified.\n\nDo NOT continue the conversation. Do NOT respond to any questions in "
    "the conversation. ONLY output the structured summary."
)
SUMMARIZATION_PROMPT = (
    "The messages above are a conversation to summarize. Create a structured context checkpoint "
    "summary that another LLM will use to continue the work.\n\nUse this EXACT format:\n\n"
    "## Goal\n[What is the user trying to accomplish? Can be multiple items if the session "
    "covers different tasks.]\n\n## Constraints & Preferences\n- [Any constraints, preferences, "
    'or requirements mentioned by user]\n- [Or "(none)" if none were mentioned]\n\n'
    "## Progress\n### Done\n- [x] [Completed tasks/changes]\n\n### In Progress\n- [ ] [Current "
    "work]\n\n### Blocked\n- [Issues preventing progress, if any]\n\n## Key Decisions\n"
    "- **[Decision]**: [Brief rationale]\n\n## Next Steps\n1. [Ordered list of what should happen "
    "next]\n\n## Critical Context\n- [Any data, examples, or references needed to continue]\n"
    '- [Or "(none)" if not applicable]\n\nKeep each section concise. Preserve exact file paths, '
    "function names, and error messages."
)
UPDATE_SUMMARIZATION_PROMPT = (
    "The messages above are NEW conversation messages to incorporate into the existing summary "
    "provided in <previous-summary> tags.\n\nUpdate the existing structured summary with new "
    "information. RULES:\n- PRESERVE all existing information from the previous summary\n"
    "- ADD new progress, decisions, and context from the new messages\n- UPDATE the Progress "
    'section: move items from "In Progress" to "Done" when completed\n- UPDATE "Next Steps" '
    "based on what was accomplished\n- PRESERVE exact file paths, function names, and error "
    "messages\n- If something is no longer relevant, you may remove it\n\nUse this EXACT "
    "format:\n\n## Goal\n[Preserve existing goals, add new ones if the task expanded]\n\n"
    "## Constraints & Preferences\n- [Preserve existing, add new ones discovered]\n\n"
    "## Progress\n### Done\n- [x] [Include previously done items AND newly completed items]\n\n"
    "### In Progress\n- [ ] [Current work - update based on progress]\n\n### Blocked\n"
    "- [Current blockers - remove if resolved]\n\n## Key Decisions\n- **[Decision]**: [Brief "
    "rationale] (preserve all previous, add new)\n\n## Next Steps\n1. [Update based on current "
    "state]\n\n## Critical Context\n- [Preserve important context, add new if needed]\n\n"
    "Keep each section concise. Preserve exact file paths, function names, and error messages."
)
BRANCH_SUMMARY_PROMPT = (
    "Create a structured summary of this conversation branch for context when returning later."
    "\n\nUse this EXACT format:\n\n## Goal\n[What was the user trying to accomplish in this "
    "branch?]\n\n## Constraints & Preferences\n- [Any constraints, preferences, or requirements "
    'mentioned]\n- [Or "(none)" if none were mentioned]\n\n## Progress\n### Done\n'
    "- [x] [Completed tasks/changes]\n\n### In Progress\n- [ ] [Work that was started but not "
    "finished]\n\n### Blocked\n- [Issues preventing progress, if any]\n\n## Key Decisions\n"
    "- **[Decision]**: [Brief rationale]\n\n## Next Steps\n1. [What should happen next to "
    "continue this work]\n\nKeep each section concise. Preserve exact file paths, function "
    "names, and error messages."
)

ENTRY_TYPES = {
    "message",
    "compaction",
    "branch_summary",
    "model_change",
    "thinking_level_change",
    "custom",
    "custom_message",
    "label",
    "session_info",
}
MESSAGE_ROLES = {
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "hookMessage",
    "branchSummary",
    "compactionSummary",
}
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}


def looks_like_pi(records: list[dict[str, Any]]) -> bool:
    """True when the records are pi session entries (header or typed entries with pi roles)."""
    for r in records:
        t = r.get("type")
        if t == "session" and isinstance(r.get("id"), str) and "request" not in r:
            return True
        if t == "message" and isinstance(r.get("message"), dict):
            if r["message"].get("role") in MESSAGE_ROLES and "uuid" not in r:
                return True
        if t in ("compaction", "model_change", "thinking_level_change", "branch_summary"):
            return True
    return False


@dataclass
class _Entry:
    """One session entry (header excluded) with its tree link and file position."""

    id: str
    parent_id: str | None
    line: int
    index: int
    """Position among parsed entries, header = 0 (what v1 `firstKeptEntryIndex` counts)."""
    record: dict[str, Any]
    valid: bool = True

    @property
    def type(self) -> str:
        return str(self.record.get("type", "")) if self.valid else "rejected"


@dataclass
class _Context:
    """What pi would send after one entry: source entries per message and the path's state."""

    items: list[tuple[_Entry, Message | None]]
    thinking_level: str | None
    model_change: dict[str, Any] | None
    last_assistant: dict[str, Any] | None
    compactions: int
    previous_summary: str | None


@dataclass
class _Session:
    """The parsed file: header, entries by id in file order, rejects and notes."""

    path: str
    header: dict[str, Any]
    entries: list[_Entry] = field(default_factory=list)
    by_id: dict[str, _Entry] = field(default_factory=dict)
    rejects: list[Reject] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    converted: dict[str, Message | None] = field(default_factory=dict)


def read_pi(path: str | Path, lines: list[Line], rejects: list[Reject]) -> TranscriptRead:
    """Replay one pi / OpenClaw session into calls (one per assistant message, plus summaries).

    A parent session also reads the sub-agent session files it spawned (same folder, or any
    agent's `sessions` folder of one OpenClaw state folder; see `links`): their calls join its
    episode. A sub-agent file that has a parent there loads nothing itself (`covered_by` names
    the parent file).
    """
    p = Path(path)
    root, name = link_name(p)
    links = folder_links(p.parent, p) if may_be_linked([ln.raw for ln in lines]) else Links()
    own = links.get(name)
    if own is not None:
        parent = root / own.spawn.parent
        return TranscriptRead(
            calls=[],
            rejects=[],
            format=FORMAT,
            harness="openclaw",
            covered_by=str(parent),
            notes=[f"sub-agent session read with its parent session {parent}"],
        )
    session = _parse(str(path), lines, rejects)
    episode_id = _session_id(session)
    harness, evidence = _harness(session)
    calls = _replay(_Replay(session, episode_id, harness))
    session.rejects.sort(key=lambda r: r[0])
    read = TranscriptRead(
        calls=calls,
        rejects=session.rejects,
        format=FORMAT,
        harness=harness,
        harness_evidence=evidence,
        episode_id=episode_id,
        notes=session.notes,
    )
    if links:
        _read_children(read, root, name, episode_id, links, {name})
    for call in read.calls:
        call.extra["harness_evidence"] = evidence
    if read.extra_files:
        # Sub-agent calls interleave with the parent's: one order for the whole episode.
        read.calls.sort(key=lambda c: (c.t_request is None, c.t_request or 0.0))
        for i, call in enumerate(read.calls):
            call.seq = i
    return read


def _session_id(session: _Session) -> str:
    return str(session.header.get("id") or Path(session.path).stem)


def _replay(replay: _Replay) -> list[Call]:
    for entry in replay.s.entries:
        if entry.type == "message" and entry.record["message"].get("role") == "assistant":
            replay.assistant_call(entry)
        elif entry.type == "compaction":
            # OpenClaw 2026.9 marks every compaction of its safeguard `fromHook` (recording
            # openclaw-2026.9.6/gateway-session): the summary still starts the next segment.
            replay.compaction_call(entry)
        elif entry.type == "branch_summary" and not entry.record.get("fromHook"):
            replay.branch_summary_call(entry)
    return replay.calls


def _read_children(
    read: TranscriptRead,
    root: Path,
    parent_name: str,
    parent_prefix: str,
    links: Links,
    seen: set[str],
) -> None:
    """Replay the sub-agent sessions `parent_name` spawned (and theirs) into `read`."""
    for link in links.spawned_by(parent_name):
        if link.child in seen:
            continue
        seen.add(link.child)
        child_path = root / link.child
        try:
            lines, rejects = read_lines(child_path)
        except OSError as exc:
            read.notes.append(f"{child_path}: sub-agent session not readable ({exc})")
            continue
        session = _parse(str(child_path), lines, rejects)
        prefix = _session_id(session)
        spawned_by = f"{parent_prefix}:L{link.spawn.line}"
        link_extra = {
            "transcript_role": "subagent",
            "spawned_by_call": spawned_by,
            "parent_tool_call_id": link.spawn.tool_call_id,
            "child_session_id": prefix,
            "child_session_key": link.spawn.child_key,
            "run_id": link.spawn.run_id,
            "link_matched_by": link.matched_by,
        }
        calls = _replay(
            _Replay(
                session,
                read.episode_id or prefix,
                read.harness or "openclaw",
                call_prefix=prefix,
                link_extra=link_extra,
            )
        )
        spawner = next((c for c in read.calls if c.call_id == spawned_by), None)
        if spawner is not None:
            spawner.extra.setdefault("spawned_sessions", []).append(prefix)
        read.calls.extend(calls)
        read.extra_files.append(str(child_path))
        if session.rejects:
            read.rejects_by_file[str(child_path)] = sorted(session.rejects, key=lambda r: r[0])
        read.notes.extend(f"{child_path}: {note}" for note in session.notes)
        _read_children(read, root, link.child, prefix, links, seen)


def _parse(path: str, lines: list[Line], rejects: list[Reject]) -> _Session:
    header: dict[str, Any] = {}
    if lines and lines[0].record.get("type") == "session":
        header = lines[0].record
        lines = lines[1:]
    session = _Session(path=path, header=header, rejects=list(rejects))
    version = header.get("version", 1) if isinstance(header.get("version", 1), int) else 1
    linear = version < 2 and not any("id" in ln.record for ln in lines)
    previous: str | None = None
    for index, ln in enumerate(lines, start=1):
        reason = _invalid_reason(ln.record)
        if linear:
            entry_id, parent_id = f"L{ln.number}", previous
        else:
            entry_id = ln.record.get("id")
            if not isinstance(entry_id, str) or not entry_id:
                session.rejects.append(
                    (ln.number, "entry has no string id (v2/v3 session)", ln.raw)
                )
                continue
            parent_id = ln.record.get("parentId")
            parent_id = parent_id if isinstance(parent_id, str) else None
        if reason:
            session.rejects.append((ln.number, reason, ln.raw))
        entry = _Entry(entry_id, parent_id, ln.number, index, ln.record, valid=not reason)
        session.entries.append(entry)
        session.by_id[entry_id] = entry
        previous = entry_id
    for e in session.entries:
        if e.parent_id is not None and e.parent_id not in session.by_id:
            session.notes.append(
                f"line {e.line}: parentId {e.parent_id!r} is not in the file; entry starts a root"
            )
            e.parent_id = None
    return session


def _invalid_reason(r: dict[str, Any]) -> str | None:
    """Why a parsed entry cannot be used, or None when it can."""
    t = r.get("type")
    if not isinstance(t, str):
        return "entry has no type"
    if t == "session":
        return "second session header"
    if t == "message":
        m = r.get("message")
        if not isinstance(m, dict):
            return "message entry without a message object"
        role = m.get("role")
        if role not in MESSAGE_ROLES:
            return f"message with unknown role {role!r}"
        if role == "assistant" and not isinstance(m.get("content"), list):
            return "assistant message content is not a list of blocks"
        if role in ("user", "toolResult", "custom", "hookMessage") and not isinstance(
            m.get("content"), (str, list)
        ):
            return f"{role} message without content"
        if role == "toolResult" and not isinstance(m.get("toolCallId"), str):
            return "toolResult without toolCallId"
    if t == "compaction":
        if not isinstance(r.get("summary"), str):
            return "compaction without summary text"
        if not isinstance(r.get("firstKeptEntryId"), str) and not isinstance(
            r.get("firstKeptEntryIndex"), int
        ):
            return "compaction without firstKeptEntryId / firstKeptEntryIndex"
    if t == "branch_summary" and not isinstance(r.get("summary"), str):
        return "branch_summary without summary text"
    return None


def _harness(session: _Session) -> tuple[str, str]:
    """'openclaw' or 'pi' and the evidence (identity.OPENCLAW_SESSION_MARKERS)."""
    return identity.pi_session_harness(
        session.path, session.header, (e.record for e in session.entries)
    )


def _endpoint(api: Any) -> str:
    api = str(api or "")
    if "anthropic" in api or not api:
        return "anthropic_messages"
    if "responses" in api:
        return "openai_responses"
    return "openai_chat"


def _blocks(content: Any) -> list[dict[str, Any]]:
    """pi content (string or text/image/thinking/toolCall blocks) as internal blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for b in content or []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            out.append({"type": "text", "text": str(b.get("text", ""))})
        elif t == "thinking":
            if b.get("redacted"):
                out.append({"type": "redacted_thinking"})
            else:
                out.append({"type": "thinking", "thinking": str(b.get("thinking", ""))})
        elif t == "toolCall":
            out.append(
                {
                    "type": "tool_use",
                    "id": str(b.get("id", "")),
                    "name": str(b.get("name", "")),
                    "input": b.get("arguments") if b.get("arguments") is not None else {},
                }
            )
        elif t == "image":
            out.append(
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": b.get("mimeType"),
                        "data": b.get("data"),
                    },
                }
            )
    return out


def _bash_text(m: dict[str, Any]) -> str:
    """pi's bashExecutionToText."""
    text = f"Ran `{m.get('command', '')}`\n"
    output = m.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif m.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {m.get('exitCode')}"
    if m.get("truncated") and m.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {m.get('fullOutputPath')}]"
    return text


def _user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def continuation_text(summary: str) -> str:
    """The user message pi puts first after a compaction."""
    return COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX


def _convert(entry: _Entry) -> Message | None:
    """The LLM message one context entry contributes (pi `convertToLlm`), or None."""
    r = entry.record
    if entry.type == "custom_message":
        return {"role": "user", "content": _blocks(r.get("content"))}
    if entry.type == "branch_summary":
        return _user(BRANCH_SUMMARY_PREFIX + str(r.get("summary", "")) + BRANCH_SUMMARY_SUFFIX)
    if entry.type != "message":
        return None
    m = r["message"]
    role = m.get("role")
    if role == "assistant":
        return {"role": "assistant", "content": _blocks(m.get("content"))}
    if role == "toolResult":
        parts = []
        for b in m.get("content") if isinstance(m.get("content"), list) else [m.get("content")]:
            if isinstance(b, dict) and b.get("type") == "image":
                parts.append("[image]")
            else:
                parts.append(text_of([b]))
        block = {
            "type": "tool_result",
            "tool_use_id": m["toolCallId"],
            "content": "".join(parts),
            "is_error": bool(m.get("isError")),
        }
        return {"role": "user", "content": [block]}
    if role == "bashExecution":
        return None if m.get("excludeFromContext") else _user(_bash_text(m))
    if role == "branchSummary":
        return _user(BRANCH_SUMMARY_PREFIX + str(m.get("summary", "")) + BRANCH_SUMMARY_SUFFIX)
    if role == "compactionSummary":
        return _user(continuation_text(str(m.get("summary", ""))))
    return {"role": "user", "content": _blocks(m.get("content"))}


def _is_failed_assistant(entry: _Entry) -> bool:
    m = entry.record.get("message", {}) if entry.type == "message" else {}
    return m.get("role") == "assistant" and m.get("stopReason") in ("error", "aborted")


def _wire(items: list[tuple[_Entry, Message | None]], endpoint: str) -> list[Message]:
    """pi-ai transformMessages on converted messages; Anthropic joins adjacent tool results."""
    out: list[Message] = []
    pending: list[dict[str, Any]] = []
    answered: set[str] = set()

    def flush() -> None:
        for tc in pending:
            if tc["id"] not in answered:
                block = {
                    "type": "tool_result",
                    "tool_use_id": tc["id"],
                    "content": "No result provided",
                    "is_error": True,
                }
                out.append({"role": "user", "content": [block]})
        pending.clear()
        answered.clear()

    for entry, msg in items:
        if msg is None:
            continue
        if msg["role"] == "assistant":
            flush()
            if _is_failed_assistant(entry):
                continue
            pending.extend(b for b in msg["content"] if b.get("type") == "tool_use")
            out.append(msg)
        elif _is_tool_result(msg):
            answered.add(msg["content"][0]["tool_use_id"])
            out.append(msg)
        else:
            flush()
            out.append(msg)
    if endpoint != "anthropic_messages":
        return out
    joined: list[Message] = []
    for msg in out:
        if _is_tool_result(msg) and joined and _is_tool_result(joined[-1]):
            joined[-1] = {"role": "user", "content": joined[-1]["content"] + msg["content"]}
        else:
            joined.append(msg)
    return joined


def _is_tool_result(msg: Message) -> bool:
    content = msg.get("content") or []
    return msg.get("role") == "user" and bool(content) and content[0].get("type") == "tool_result"


class _Replay:
    """Builds calls entry by entry, reusing each entry's converted message."""

    def __init__(
        self,
        session: _Session,
        episode_id: str,
        harness: str,
        *,
        call_prefix: str | None = None,
        link_extra: dict[str, Any] | None = None,
    ) -> None:
        self.s = session
        self.episode_id = episode_id
        self.harness = harness
        self.call_prefix = call_prefix or episode_id
        """Call ids are `<prefix>:L<line>`; a sub-agent session keeps its own id as prefix."""
        self.link_extra = link_extra or {}
        """For a sub-agent session's calls: role and the spawn that started it."""
        self.calls: list[Call] = []

    def _message(self, entry: _Entry) -> Message | None:
        if entry.id not in self.s.converted:
            self.s.converted[entry.id] = _convert(entry) if entry.valid else None
        return self.s.converted[entry.id]

    def _path(self, leaf_id: str | None) -> list[_Entry]:
        path: list[_Entry] = []
        seen: set[str] = set()
        current = self.s.by_id.get(leaf_id) if leaf_id else None
        while current is not None and current.id not in seen:
            seen.add(current.id)
            path.append(current)
            current = self.s.by_id.get(current.parent_id) if current.parent_id else None
        path.reverse()
        return path

    def _first_kept(self, compaction: _Entry) -> str | None:
        r = compaction.record
        if isinstance(r.get("firstKeptEntryId"), str):
            return r["firstKeptEntryId"]
        index = r.get("firstKeptEntryIndex")
        for e in self.s.entries:
            if e.index == index:
                return e.id
        return None

    def context(self, leaf_id: str | None) -> _Context:
        """pi buildSessionContext for the path ending at `leaf_id`."""
        path = self._path(leaf_id)
        thinking: str | None = self.s.header.get("thinkingLevel", "off")
        model_change: dict[str, Any] | None = None
        last_assistant: dict[str, Any] | None = None
        compaction_at = -1
        compactions = 0
        for i, e in enumerate(path):
            if e.type == "thinking_level_change":
                thinking = e.record.get("thinkingLevel")
            elif e.type == "model_change":
                model_change = {
                    "provider": e.record.get("provider"),
                    "model_id": e.record.get("modelId"),
                    "line": e.line,
                }
            elif e.type == "message" and e.record["message"].get("role") == "assistant":
                last_assistant = e.record["message"]
            elif e.type == "compaction":
                compaction_at = i
                compactions += 1
        items: list[tuple[_Entry, Message | None]] = []
        previous_summary = None
        if compaction_at >= 0:
            comp = path[compaction_at]
            previous_summary = str(comp.record.get("summary", ""))
            items.append((comp, _user(continuation_text(previous_summary))))
            first_kept = self._first_kept(comp)
            kept = False
            for e in path[:compaction_at]:
                kept = kept or e.id == first_kept
                if kept:
                    items.append((e, self._message(e)))
            if not kept:
                self.s.notes.append(
                    f"line {comp.line}: first kept entry {first_kept!r} is not on the path"
                )
            rest = path[compaction_at + 1 :]
        else:
            rest = path
        items.extend((e, self._message(e)) for e in rest)
        return _Context(
            items, thinking, model_change, last_assistant, compactions, previous_summary
        )

    def _base_extra(self, ctx: _Context, entry: _Entry) -> dict[str, Any]:
        return {
            "transcript_format": FORMAT,
            "entry_id": entry.id,
            "parent_entry_id": entry.parent_id,
            "transcript_segment": ctx.compactions,
            "thinking_level": ctx.thinking_level,
            "model_change": ctx.model_change,
        }

    def _times(self, entry: _Entry) -> tuple[float | None, float | None]:
        parent = self.s.by_id.get(entry.parent_id) if entry.parent_id else None
        t_response = parse_time(entry.record.get("timestamp"))
        t_request = parse_time(parent.record.get("timestamp")) if parent else None
        return t_request if t_request is not None else t_response, t_response

    def _hidden_turn(self, entry: _Entry) -> str | None:
        """Evidence that an assistant entry belongs to a turn the harness recorded as hidden
        maintenance: the reply and the user message that opened its turn both `display:
        false` (OpenClaw 2026.8 `projectAgentHarnessTranscriptMessageForDisplay`, `hidden:
        trigger === "memory"`: a memory flush kept in the transcript, not shown as chat). A
        hidden user message alone is no evidence: OpenClaw also hides its sub-agents-settled
        prompt and internal chat sends, and answers them visibly."""
        if entry.record["message"].get("display") is not False:
            return None
        seen: set[str] = set()
        current = self.s.by_id.get(entry.parent_id) if entry.parent_id else None
        while current is not None and current.id not in seen:
            seen.add(current.id)
            if current.type == "compaction":
                return None
            if current.type == "message" and current.valid:
                m = current.record["message"]
                if m.get("role") == "user":
                    if m.get("display") is not False:
                        return None
                    return (
                        f"line {current.line} (user) and line {entry.line} (reply) display: false"
                    )
            current = self.s.by_id.get(current.parent_id) if current.parent_id else None
        return None

    def assistant_call(self, entry: _Entry) -> None:
        m = entry.record["message"]
        ctx = self.context(entry.parent_id)
        api = m.get("api") or (ctx.last_assistant or {}).get("api")
        endpoint = _endpoint(api)
        stop = m.get("stopReason")
        failure, error, status = None, None, 200
        if stop == "error":
            failure, error = "failed_http", str(m.get("errorMessage") or "error")
            head = error[:3]
            status = int(head) if head.isdigit() else None
        elif stop == "aborted":
            failure, error = "truncated_stream", str(m.get("errorMessage") or "aborted")
        model = m.get("model") or (ctx.model_change or {}).get("model_id")
        extra = self._base_extra(ctx, entry)
        extra.update(
            transcript_role="main",
            provider=m.get("provider"),
            api=api,
            stop_reason_raw=stop,
        )
        extra.update(self.link_extra)
        hidden = self._hidden_turn(entry)
        if hidden is not None:
            extra[HIDDEN_MAINTENANCE] = hidden
        t_request, t_response = self._times(entry)
        if isinstance(m.get("timestamp"), (int, float)):
            t_request = parse_time(m["timestamp"])
        self.calls.append(
            transcript_call(
                call_id=f"{self.call_prefix}:L{entry.line}",
                source_file=self.s.path,
                line=entry.line,
                endpoint=endpoint,  # type: ignore[arg-type]
                seq=len(self.calls),
                t_request=t_request,
                t_response=t_response,
                http_status=status,
                episode_id=self.episode_id,
                harness=self.harness,
                model=model,
                messages=_wire(ctx.items, endpoint),
                response={"role": "assistant", "content": _blocks(m.get("content"))},
                stop_reason=_STOP_REASONS.get(stop, stop),
                usage=usage_of(m.get("usage"), _USAGE_KEYS),
                failure=failure,  # type: ignore[arg-type]
                error=error,
                extra=extra,
            )
        )

    def _summary_call(
        self,
        entry: _Entry,
        ctx: _Context,
        items: list[tuple[_Entry, Message | None]],
        instruction: str,
        role: str,
        extra: dict[str, Any],
    ) -> None:
        api = (ctx.last_assistant or {}).get("api")
        endpoint = _endpoint(api)
        model = (ctx.model_change or {}).get("model_id") or (ctx.last_assistant or {}).get("model")
        if ctx.last_assistant and ctx.last_assistant.get("model"):
            model = ctx.last_assistant["model"]
        messages = _wire(items, endpoint) + [_user(instruction)]
        summary = str(entry.record.get("summary", ""))
        base = self._base_extra(ctx, entry)
        base.update({k: v for k, v in self.link_extra.items() if k != "transcript_role"})
        base.update(transcript_role=role, synthetic_request=True, api=api, **extra)
        t_request, t_response = self._times(entry)
        self.calls.append(
            summary_call(
                summary=summary,
                call_id=f"{self.call_prefix}:L{entry.line}:summary",
                source_file=self.s.path,
                line=entry.line,
                endpoint=endpoint,
                seq=len(self.calls),
                t_request=t_request,
                t_response=t_response,
                episode_id=self.episode_id,
                harness=self.harness,
                model=model,
                system=SUMMARIZATION_SYSTEM_PROMPT,
                messages=messages,
                extra=base,
            )
        )

    def compaction_call(self, entry: _Entry) -> None:
        """The summary request that produced a compaction: what it dropped plus pi's prompt."""
        ctx = self.context(entry.parent_id)
        first_kept = self._first_kept(entry)
        cut = next((i for i, (e, _) in enumerate(ctx.items) if e.id == first_kept), None)
        if cut is None:
            self.s.notes.append(f"line {entry.line}: first kept entry {first_kept!r} not found")
            cut = len(ctx.items)
        if ctx.previous_summary is not None:
            instruction = (
                f"<previous-summary>\n{ctx.previous_summary}\n</previous-summary>\n\n"
                + UPDATE_SUMMARIZATION_PROMPT
            )
        else:
            instruction = SUMMARIZATION_PROMPT
        self._summary_call(
            entry,
            ctx,
            ctx.items[:cut],
            instruction,
            "compaction_summary",
            {
                "tokens_before": entry.record.get("tokensBefore"),
                "first_kept_entry_id": first_kept,
                "summary_from_hook": bool(entry.record.get("fromHook")),
                "continuation_text_prefix": COMPACTION_SUMMARY_PREFIX,
            },
        )

    def branch_summary_call(self, entry: _Entry) -> None:
        """The summary request of an abandoned branch: that branch's context plus pi's prompt."""
        from_id = entry.record.get("fromId")
        leaf = from_id if isinstance(from_id, str) and from_id in self.s.by_id else entry.parent_id
        ctx = self.context(leaf)
        self._summary_call(
            entry,
            ctx,
            ctx.items,
            BRANCH_SUMMARY_PROMPT,
            "branch_summary",
            {"from_entry_id": from_id},
        )


# The Format interface of this module (clawviz.ingest.formats).
NAME = FORMAT
detect = looks_like_pi
read = read_pi
