"""Pure helpers behind the call inspector (no Streamlit, so they are unit-tested directly)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from clawviz.recon.canonical import message_hash
from clawviz.types import Call, CallDecision, EpisodeAnalysis, Message

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=^])")


# GFM autolink literals (mdast-util-gfm-autolink-literal) are found in the text after escapes
# are resolved, so backslashes cannot stop them: a WORD JOINER (U+2060, invisible) after the
# scheme, after "www" and after "@" breaks the patterns without changing what is shown.
_AUTOLINK = re.compile(r"(?i)(https?)(?=:)|(www)(?=\.)|(@)")
WORD_JOINER = "\u2060"


def no_autolink(text: str) -> str:
    """Text whose bare URLs and e-mail addresses Markdown will not turn into links."""
    return _AUTOLINK.sub(lambda m: m.group(0) + WORD_JOINER, text)


def escape_md(text: str) -> str:
    """Backslash-escape Markdown (and directive) syntax so log text shows literally, and keep
    bare URLs from becoming links."""
    return _MD_SPECIAL.sub(r"\\\1", no_autolink(text)).replace("\n", " ")


@dataclass
class MessageDelta:
    """A call's request split into history shared with its parent and what is new."""

    shared: list[Message]
    new: list[Message]
    parent_id: str | None


def message_delta(call: Call, parent: Call | None) -> MessageDelta:
    """Split `call.messages` at the longest prefix it shares with the parent's conversation."""
    if parent is None:
        return MessageDelta([], list(call.messages), None)
    before = list(parent.messages) + ([parent.response] if parent.response else [])
    mine = [message_hash(m) for m in call.messages]
    theirs = [message_hash(m) for m in before]
    n = 0
    for a, b in zip(mine, theirs, strict=False):
        if a != b:
            break
        n += 1
    return MessageDelta(call.messages[:n], call.messages[n:], parent.call_id)


def call_label(i: int, call: Call, decision: CallDecision | None) -> str:
    """One line naming a call in the call picker: number, role, state / reason, model."""
    parts = [f"{i + 1:>3}"]
    if decision is not None:
        parts.append(decision.role)
        parts.append(decision.state + (f" ({decision.reason})" if decision.reason else ""))
    if call.model:
        parts.append(call.model)
    if call.http_status is not None and not 200 <= call.http_status < 300:
        parts.append(f"HTTP {call.http_status}")
    return " · ".join(parts)


def tool_input_json(value: Any) -> str:
    """Tool-call arguments as indented JSON (strings that hold JSON are parsed first)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def block_text(value: Any) -> str:
    """Tool-result content as text (a list of text blocks is joined)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for b in value:
            if isinstance(b, dict) and b.get("type") == "text":
                parts.append(str(b.get("text", "")))
            else:
                parts.append(json.dumps(b, ensure_ascii=False, default=str))
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False, default=str)


def duration_s(call: Call) -> float | None:
    if call.t_request is None or call.t_response is None:
        return None
    return call.t_response - call.t_request


def path_rows(analysis: EpisodeAnalysis) -> list[dict[str, Any]]:
    """The Paths table: one row per root-to-leaf path."""
    rows = []
    for p in analysis.paths:
        rows.append(
            {
                "path": p.path_id,
                "segment": p.segment,
                "state": p.state,
                "reason": p.reason or "",
                "calls": len(p.call_ids),
                "generated tokens": p.generated_tokens,
                "reward": p.reward,
                "GRPO advantage": p.advantage,
                "PPO return": p.ppo_return,
                "PPO A_t": "logged values" if p.has_values else "no values logged",
            }
        )
    return rows


def ignored_for_matching(decision: CallDecision | None) -> list[dict[str, Any]]:
    """Rows of what tree matching left out of a call's request, and why (plain text)."""
    if decision is None:
        return []
    return [
        {
            "message": int(i.get("index", 0)) + 1,
            "rule": str(i.get("code", "")),
            "text": str(i.get("excerpt", "")),
            "why": str(i.get("why", "")),
        }
        for i in decision.match_ignored
    ]
