"""Which harness made a call, from what it sends, and the evidence (docs/FORMATS-NOTES.md
"Identity").

One marker table per input kind, one row per marker, so a new harness version is a one-line
change. `wire_harness` reads an exchange (system prompt, tools, user-agent, headers);
`pi_session_harness` tells an OpenClaw session file from a pi one (OpenClaw writes pi's session
format). Each returns the harness and a one-line `harness_evidence`, which the call keeps in
`Call.extra["harness_evidence"]`.

`traffic_episode_name` names the episode of a wire log that carries no recorder metadata and no
session id: the harness and the first request's time, never the file path.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Marker:
    """`text` found in the `where` part of a request names its `harness`."""

    harness: str
    where: str
    """system (system prompt / instructions / leading system-developer messages) | tool (a
    tool name, exact) | user-agent (substring) | header (a header name present; `name: prefix`
    for a value prefix)."""
    text: str


WIRE_MARKERS: tuple[Marker, ...] = (
    # System prompts: the strongest evidence (pi and OpenClaw share the OpenAI/JS client).
    Marker("openclaw", "system", "You are a personal assistant running inside OpenClaw."),
    Marker("openclaw", "system", "<!-- openclaw:"),
    Marker("pi", "system", "operating inside pi, a coding agent harness"),
    Marker("claude-code", "system", "You are Claude Code, Anthropic's official CLI"),
    Marker(
        "claude-code", "system", "You are a Claude agent, built on Anthropic's Claude Agent SDK"
    ),
    Marker("claude-code", "system", "You are an agent for Claude Code"),
    Marker("claude-code", "system", "x-anthropic-billing-header: cc_version="),
    Marker("codex", "system", "You are a coding agent running in the Codex CLI"),
    # Tools only one harness defines.
    Marker("openclaw", "tool", "sessions_spawn"),
    Marker("openclaw", "tool", "sessions_yield"),
    # Client identification.
    Marker("claude-code", "user-agent", "claude-cli/"),
    Marker("claude-code", "user-agent", "claude-code"),
    Marker("codex", "user-agent", "codex_"),
    Marker("claude-code", "header", "x-claude-code-session-id"),
    Marker("claude-code", "header", "anthropic-beta: claude-code-"),
    Marker("codex", "header", "originator: codex"),
    Marker("codex", "header", "x-codex-turn-metadata"),
    Marker("openclaw", "header", "x-session-id"),
)
"""Tried in order; the first that matches names the harness."""

OPENCLAW_SESSION_MARKERS: tuple[Marker, ...] = (
    Marker("openclaw", "entry", "custom:model-snapshot"),
    Marker("openclaw", "entry", "custom:openclaw"),
    Marker("openclaw", "user", "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"),
    Marker("openclaw", "user", "OpenClaw runtime context"),
    Marker("openclaw", "user", "[OpenClaw heartbeat poll]"),
    Marker("openclaw", "user", "[Subagent Context]"),
    Marker("openclaw", "user", "[cron:"),
    Marker("openclaw", "tool", "sessions_spawn"),
    Marker("openclaw", "tool", "sessions_yield"),
    Marker("openclaw", "cwd", ".openclaw"),
    Marker("openclaw", "path", ".openclaw"),
)
"""An OpenClaw session file (pi's format, written by OpenClaw): any of these; else it is pi's.
`entry` is `custom:<customType prefix>`; `user` a substring of a user message's text."""

OPENCLAW_DATE_ENVELOPE = re.compile(r"^\[(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d\d-\d\d \d\d:\d\d")
"""OpenClaw's date envelope at the start of a user message (`[Thu 2026-03-05 10:00 GMT+8] ...`);
pi sends the user's text as typed."""


def _texts(content: Any) -> Iterable[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                yield b["text"]
            elif isinstance(b, str):
                yield b


def system_texts(body: Any) -> list[str]:
    """The system prompt of a request body, whatever the API: `system`, `instructions` and the
    leading `system` / `developer` messages or input items."""
    if not isinstance(body, dict):
        return []
    out = [*_texts(body.get("system")), *_texts(body.get("instructions"))]
    for key in ("messages", "input"):
        items = body.get(key)
        if not isinstance(items, list):
            continue
        for m in items[:4]:
            if not isinstance(m, dict) or m.get("role") not in ("system", "developer"):
                break
            out.extend(_texts(m.get("content")))
    return out


def _tool_names(body: Any) -> set[str]:
    tools = body.get("tools") if isinstance(body, dict) else None
    names: set[str] = set()
    for t in tools if isinstance(tools, list) else []:
        if isinstance(t, dict):
            fn = t.get("function")
            name = t.get("name") or (fn.get("name") if isinstance(fn, dict) else None)
            if isinstance(name, str):
                names.add(name)
    return names


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def wire_harness(headers: dict[str, str], body: Any) -> tuple[str | None, str | None]:
    """The harness an exchange's request names, and the evidence (None, None: no marker)."""
    lower = {k.lower(): str(v) for k, v in headers.items()}
    systems: list[str] | None = None
    tools: set[str] | None = None
    for m in WIRE_MARKERS:
        if m.where == "system":
            systems = system_texts(body) if systems is None else systems
            if any(m.text in s for s in systems):
                return m.harness, f'system prompt contains "{m.text}"'
        elif m.where == "tool":
            tools = _tool_names(body) if tools is None else tools
            if m.text in tools:
                return m.harness, f"tool {m.text} defined"
        elif m.where == "user-agent":
            agent = lower.get("user-agent", "")
            if m.text in agent.lower():
                return m.harness, f'user-agent "{_short(agent)}" contains "{m.text}"'
        elif m.where == "header":
            name, _, prefix = m.text.partition(": ")
            value = lower.get(name)
            if value is not None and value.startswith(prefix):
                shown = f"{name}: {_short(value, 40)}" if prefix else name
                return m.harness, f"header {shown}"
    return None, None


def pi_session_harness(
    path: str, header: dict[str, Any], entries: Iterable[dict[str, Any]]
) -> tuple[str, str]:
    """'openclaw' or 'pi' for a pi-format session file, with the evidence; `entries` are its
    records after the header (the first 200 are looked at)."""
    probes = {"cwd": str(header.get("cwd", "")), "path": path}
    for n, r in enumerate(entries):
        if n >= 200:
            break
        if r.get("type") == "custom":
            kind = f"custom:{r.get('customType')}"
            for mk in OPENCLAW_SESSION_MARKERS:
                if mk.where == "entry" and kind.startswith(mk.text):
                    return mk.harness, f"session entry {kind}"
        msg = r.get("message") if r.get("type") == "message" else None
        if not isinstance(msg, dict):
            continue
        if msg.get("role") == "user":
            text = "\n".join(_texts(msg.get("content")))[:8000]
            for mk in OPENCLAW_SESSION_MARKERS:
                if mk.where == "user" and mk.text in text:
                    return mk.harness, f'user message contains "{mk.text}"'
            if OPENCLAW_DATE_ENVELOPE.match(text):
                return "openclaw", f'user message starts with OpenClaw\'s date "{text[:28]}"'
        elif msg.get("role") == "assistant":
            for b in msg.get("content") or []:
                if isinstance(b, dict) and b.get("type") == "toolCall":
                    for mk in OPENCLAW_SESSION_MARKERS:
                        if mk.where == "tool" and b.get("name") == mk.text:
                            return mk.harness, f"tool call {mk.text}"
    for mk in OPENCLAW_SESSION_MARKERS:
        if mk.where in probes and mk.text in probes[mk.where]:
            return mk.harness, f'session {mk.where} contains "{mk.text}"'
    return "pi", "pi session format with no OpenClaw marker"


def _iso(ts: float) -> str:
    ms = int(round((ts % 1) * 1000)) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(ts))) + f".{ms:03d}Z"


def traffic_episode_name(records: Iterable[Any]) -> str | None:
    """`<harness>-<first line's request time, UTC ISO>` for the exchange records of a wire
    log's head (`session-<time>` when no marker names the harness); None without a request
    timestamp. The first line, not the earliest time: a log that grows keeps its name."""
    first: float | None = None
    harness: str | None = None
    for rec in records:
        req = rec.get("request") if isinstance(rec, dict) else None
        if not isinstance(req, dict):
            continue
        ts = req.get("timestamp")
        if first is None and isinstance(ts, (int, float)) and not isinstance(ts, bool):
            first = float(ts)
        if harness is None:
            headers = req.get("headers")
            harness, _ = wire_harness(headers if isinstance(headers, dict) else {}, req.get("body"))
    if first is None:
        return None
    return f"{harness or 'session'}-{_iso(first)}"
