"""The Episode explorer's payload: one episode as plain JSON for the client-side explorer
(`clawviz/ui/explorer/`) and the self-contained file of `clawviz share` (issue 25).

Pure core: no Streamlit. The payload holds the tree (nodes with x/y and edges), and per call its
summary, its request diffed against its parent, its response and its decision. Every distinct
text (a message, a system prompt, a response) is stored once in `texts`; calls refer to it by
index. All text is data: the client inserts it with textContent only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from clawviz.figures.explorer.cost import call_cost, call_timing, episode_cost
from clawviz.figures.layout import tree_layout
from clawviz.recon import call_diff, call_edits, message_lines
from clawviz.settings import Prices
from clawviz.types import Call, CallDecision, EpisodeAnalysis, Message, Role, State, call_label

PAYLOAD_VERSION = 1
REDACTED_TOOL_RESULT = "[tool result redacted]"
REDACTED_SYSTEM = "[system prompt redacted]"
MAX_TEXT = 1_000_000
"""Characters of one text kept in the payload; longer texts are cut with a visible note (a
5 MB message still opens; the inspector shows the first part of a long text with "show all")."""


@dataclass
class _Texts:
    """Distinct texts, each stored once; `ref` returns its index."""

    items: list[str]
    index: dict[str, int]

    def ref(self, text: str) -> int:
        if len(text) > MAX_TEXT:
            cut = len(text) - MAX_TEXT
            text = (
                text[:MAX_TEXT] + f"\n… {cut:,} more characters not included in the explorer "
                "(the classic inspector's Raw panel has the whole call) …"
            )
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.items)
            self.items.append(text)
        return i


def _redact_message(message: Message) -> Message:
    """The message without tool results (a tool-role message becomes one note)."""
    if message.get("role") == "tool":
        return {"role": "tool", "content": REDACTED_TOOL_RESULT}
    content = message.get("content")
    if not isinstance(content, list):
        return message
    out = copy.copy(message)
    out["content"] = [
        {"type": "text", "text": REDACTED_TOOL_RESULT}
        if isinstance(b, dict) and b.get("type") == "tool_result"
        else b
        for b in content
    ]
    return out


def redact_call(call: Call) -> Call:
    """A copy of the call with no system prompt and no tool results."""
    out = copy.copy(call)
    out.system = REDACTED_SYSTEM if call.system else ""
    out.messages = [_redact_message(m) for m in call.messages]
    return out


def _message_text(index: int, message: Message) -> str:
    return "\n".join(message_lines(index, message))


MAX_DIFF_LINE = 20_000
"""Characters of one diff line kept; the whole text is under Request messages."""


def _line(text: str) -> str:
    if len(text) <= MAX_DIFF_LINE:
        return text
    cut = len(text) - MAX_DIFF_LINE
    return text[:MAX_DIFF_LINE] + f" … {cut:,} more characters on this line (Request messages) …"


def _diff_payload(
    call: Call, parent: Call, ignored: list[dict[str, Any]], parent_ignored: list[dict[str, Any]]
) -> dict[str, Any]:
    d = call_diff(call, parent, call_ignored=ignored, parent_ignored=parent_ignored)
    out: dict[str, Any] = {"parent": parent.call_id}
    for sec in d.sections:
        out[sec.name] = {
            "added": sec.added,
            "removed": sec.removed,
            "lines": [
                [
                    ln.kind,
                    ln.folded if ln.kind == "fold" else _line(ln.text),
                    1 if ln.ignored else 0,
                ]
                for ln in sec.lines
            ],
        }
    return out


EDIT_KEYS = ("rule", "code", "explained", "summary")


def history_edits(
    call: Call,
    parent: Call | None,
    decision: CallDecision | None,
    parent_decision: CallDecision | None = None,
) -> list[dict[str, Any]]:
    """What "History vs parent" lists: how the call's history differs from its parent's
    request plus reply, one dict per edit with keys `rule` (the rule that explains it, or ""),
    `code` (a short machine code), `explained` (bool: a named edit rule of `recon.edits`
    explains it) and `summary` (one line for a person), from `recon.calldiff.call_edits`. The
    inspector lists them when the list is not empty (explained ones labelled with their rule,
    unexplained ones highlighted)."""
    if parent is None:
        return []
    return call_edits(
        call,
        parent,
        call_ignored=decision.match_ignored if decision else (),
        parent_ignored=parent_decision.match_ignored if parent_decision else (),
    )


def _edits(
    call: Call,
    parent: Call | None,
    decision: CallDecision | None,
    parent_decision: CallDecision | None = None,
) -> list[dict[str, Any]]:
    """`history_edits` checked: exactly the four keys, text as text, `explained` a bool."""
    out = []
    for e in history_edits(call, parent, decision, parent_decision):
        out.append(
            {
                "rule": str(e.get("rule") or ""),
                "code": str(e.get("code") or ""),
                "explained": bool(e.get("explained")),
                "summary": str(e.get("summary") or ""),
            }
        )
    return out


def _num(v: Any) -> Any:
    if isinstance(v, float) and v != v:  # NaN is not JSON
        return None
    return v


def build_payload(
    episode_id: str,
    calls: list[Call],
    analysis: EpisodeAnalysis | None,
    *,
    redact: bool = False,
    title: str | None = None,
    prices: Prices | None = None,
) -> dict[str, Any]:
    """The explorer's JSON payload for one episode (see the module docstring). `prices` (the
    `prices` setting) gives each call and the episode a cost; with none, no cost is shown."""
    if redact:
        calls = [redact_call(c) for c in calls]
    layout = tree_layout(calls, analysis)
    by_id = {c.call_id: c for c in calls}
    decisions = analysis.decisions if analysis else {}
    texts = _Texts([], {})
    # Calls re-send their history: each message object is rendered to text once, not per call.
    rendered: dict[tuple[int, int], int] = {}

    def message_ref(i: int, m: Message) -> int:
        key = (i, id(m))
        ref = rendered.get(key)
        if ref is None:
            ref = rendered[key] = texts.ref(_message_text(i, m))
        return ref

    pins: dict[str, list[dict[str, str]]] = {}
    for p in layout.pins:
        pins.setdefault(p.call_id, []).append({"code": p.code, "evidence": p.evidence})
    children: dict[str, list[str]] = {}
    parent_of: dict[str, str | None] = {}
    for n in layout.nodes:
        d = decisions.get(n.call_id)
        parent = d.parent_call if d and d.parent_call in by_id else None
        parent_of[n.call_id] = parent
        if parent:
            children.setdefault(parent, []).append(n.call_id)
    out_calls: list[dict[str, Any]] = []
    starts = [c.t_request for c in calls if c.t_request is not None]
    t0 = min(starts) if starts else None
    costs = []
    for n in sorted(layout.nodes, key=lambda n: n.index):
        c = by_id[n.call_id]
        d = decisions.get(n.call_id)
        parent = parent_of[n.call_id]
        diff = None
        if parent is not None:
            pd = decisions.get(parent)
            diff = _diff_payload(
                c,
                by_id[parent],
                list(d.match_ignored) if d else [],
                list(pd.match_ignored) if pd else [],
            )
        response = None
        if c.response is not None:
            response = texts.ref(_message_text(len(c.messages), c.response))
        duration = (
            c.t_response - c.t_request
            if c.t_response is not None and c.t_request is not None
            else None
        )
        cost = call_cost(c, prices) if prices else None
        costs.append(cost)
        out_calls.append(
            {
                "id": c.call_id,
                "label": call_label(c),
                "x": n.x,
                "y": n.y,
                "state": str(n.state),
                "role": str(n.role),
                "category": str(n.category),
                "reason": str(n.reason) if n.reason else None,
                "role_reason": d.role_reason if d else "",
                "note": n.note,
                "parent": parent,
                "children": children.get(n.call_id, []),
                "retry_of": d.retry_of if d else None,
                "segment": n.segment,
                "failed": str(n.state) == State.FAILED,
                "compaction": str(n.role) == Role.AUX_SUMMARY,
                "pins": pins.get(n.call_id, []),
                "model": c.model,
                "endpoint": str(c.endpoint),
                "http_status": c.http_status,
                "stop_reason": c.stop_reason,
                "error": c.error,
                "source": f"{c.source_file}:{c.line}",
                "duration_s": _num(duration),
                "usage": {
                    "input": c.usage.input_tokens,
                    "output": c.usage.output_tokens,
                    "cache_read": c.usage.cache_read_input_tokens,
                    "cache_write": c.usage.cache_creation_input_tokens,
                },
                "system": texts.ref(c.system) if c.system else None,
                "messages": [message_ref(i, m) for i, m in enumerate(c.messages)],
                "response": response,
                "diff": diff,
                "paths": list(n.path_ids),
                "reward": _num(n.reward),
                "advantage": _num(n.advantage),
                "timing": {k: _num(v) for k, v in call_timing(c, t0).items()},
                "cost": cost.as_dict() if cost else None,
                # Each edit against the parent, with the rule that explains it (recon.edits).
                "edits": _edits(
                    c,
                    by_id.get(parent) if parent else None,
                    d,
                    decisions.get(parent) if parent else None,
                ),
            }
        )
    kept = next(
        (list(p.call_ids) for p in (analysis.paths if analysis else []) if p.state == "kept"),
        [],
    )
    return {
        "version": PAYLOAD_VERSION,
        "episode": {
            "id": episode_id,
            "title": title or episode_id,
            "status": analysis.status if analysis else None,
            "reward": _num(analysis.reward) if analysis else None,
            "reasons": [
                {"code": str(r.code), "evidence": r.evidence, "call_id": r.call_id}
                for r in (analysis.reasons if analysis else [])
            ],
            "redacted": redact,
            "task": next((c.task_id for c in calls if c.task_id), None),
            "harness": next((c.harness for c in calls if c.harness), None),
            "model": next((c.model for c in calls if c.model), None),
            "attempt": next((c.attempt for c in calls if c.attempt is not None), None),
            "advantage": _num(analysis.advantage) if analysis else None,
            "cost": episode_cost(costs) if prices else None,
        },
        "texts": texts.items,
        "calls": out_calls,
        "edges": [{"src": e.src, "dst": e.dst, "kind": e.kind} for e in layout.edges],
        "paths": layout.paths,
        "kept_path": kept,
        "boundaries": list(layout.boundaries),
        "comments": {},
    }
