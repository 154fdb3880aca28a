"""Pure helpers behind the call inspector (no Streamlit, so they are unit-tested directly)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from clawviz.recon import base_role_reason, message_hash, retry_note
from clawviz.types import Call, CallDecision, EpisodeAnalysis, Message, Reason
from clawviz.types import call_label as number

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


def call_label(call: Call, decision: CallDecision | None) -> str:
    """One line naming a call in the call picker: `call N` (`clawviz.types.call_label`), role,
    state / reason, model."""
    parts = [f"call {number(call)}"]
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


def path_rows(
    analysis: EpisodeAnalysis, calls: dict[str, Call] | None = None
) -> list[dict[str, Any]]:
    """The Paths table: one row per root-to-leaf path, its calls by number, why it lost."""
    rows = []
    calls = calls or {}

    def n(cid: str) -> str:
        return number(calls[cid]) if cid in calls else cid

    for p in analysis.paths:
        rows.append(
            {
                "path": p.path_id,
                "segment": p.segment,
                "state": p.state,
                "reason": p.reason or "",
                "why": p.why,
                "leaf": f"call {n(p.call_ids[-1])}" if p.call_ids else "—",
                "call numbers": " → ".join(n(c) for c in p.call_ids),
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


def reasons_at(analysis: EpisodeAnalysis | None, call_id: str) -> list[Reason]:
    """The episode reasons pinned on a call (it caused them)."""
    return [r for r in (analysis.reasons if analysis else []) if r.call_id == call_id]


def reasons_concerning(analysis: EpisodeAnalysis | None, call_id: str) -> list[Reason]:
    """Episode reasons a call is one of several calls of, without being where it is pinned."""
    return [
        r
        for r in (analysis.reasons if analysis else [])
        if call_id in r.call_ids and r.call_id != call_id
    ]


def reason_text(r: Reason, calls: dict[str, Call]) -> str:
    """`code: evidence (at call N)`, the one way an episode reason is written."""
    text = str(r.code) + (f": {r.evidence}" if r.evidence else "")
    if r.call_id:
        at = number(calls[r.call_id]) if r.call_id in calls else r.call_id
        text += f" (at call {at})"
    return text


def role_reason_text(decision: CallDecision) -> str:
    """Why a call has its role (and, by a tolerance rule, its parent), without the retry note."""
    return base_role_reason(decision.role_reason)


def retry_text(decision: CallDecision | None) -> str:
    """The stored retry note of a call: what it retries, what replaced it, the keeper rationale."""
    return retry_note(decision.role_reason) if decision is not None else ""


def replacement_of(analysis: EpisodeAnalysis | None, call_id: str) -> str | None:
    """The call that took the place of a superseded or failed retry (or of the retried call
    above it): the group member that is not itself replaced, following the stored retry_of links
    and parents."""
    if analysis is None:
        return None
    dec = analysis.decisions
    retried_by: dict[str, list[str]] = {}
    for d in dec.values():
        if d.retry_of:
            retried_by.setdefault(d.retry_of, []).append(d.call_id)
    cur: str | None = call_id
    seen: set[str] = set()
    while cur is not None and cur not in seen:
        seen.add(cur)
        found = dec.get(cur)
        if found is None:
            return None
        if found.retry_of or cur in retried_by:
            group = _retry_group(cur, dec, retried_by)
            keepers = [
                m
                for m in group
                if dec[m].state not in ("failed",) and dec[m].reason != "superseded_retry"
            ]
            return keepers[0] if keepers and keepers[0] != call_id else None
        if found.reason != "superseded_retry":
            return None
        cur = found.parent_call
    return None


def _retry_group(
    start: str, dec: dict[str, CallDecision], retried_by: dict[str, list[str]]
) -> list[str]:
    group, todo = [], [start]
    while todo:
        x = todo.pop()
        if x in group or x not in dec:
            continue
        group.append(x)
        prev = dec[x].retry_of
        if prev:
            todo.append(prev)
        todo.extend(retried_by.get(x, []))
    return group


def winning_path(analysis: EpisodeAnalysis | None, call_id: str) -> str | None:
    """For a not_longest call: the kept path of its segment (the one that beat its branch)."""
    if analysis is None:
        return None
    mine = [p for p in analysis.paths if call_id in p.call_ids and p.state != "kept"]
    if not mine:
        return None
    kept = [p for p in analysis.paths if p.state == "kept" and p.segment == mine[0].segment]
    return kept[0].path_id if kept else None
