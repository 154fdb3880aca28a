"""Why each call of an episode got its role and state: rows for `--json`, an indented tree else."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import orjson
from sqlmodel import Session, col, select

from clawviz.jobs import episode_analysis
from clawviz.recon import base_role_reason, importance_ratios, retry_note
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store import CallRow
from clawviz.types import (
    EpisodeAnalysis,
    PathInfo,
    Rollout,
    call_label,
    call_order_key,
    format_value,
)


@dataclass(frozen=True)
class CallFacts:
    """What explain shows about a call besides its decision."""

    call_id: str
    source_file: str
    line: int
    seq: int | None
    t_request: float | None
    endpoint: str
    http_status: int | None
    output_tokens: int | None = None
    rollout_json: str | None = None
    harness: str | None = None
    extra_json: str | None = None


def _facts(session: Session, episode_id: str) -> list[CallFacts]:
    names = [f.name for f in fields(CallFacts)]
    rows = session.execute(
        select(*(col(getattr(CallRow, n)) for n in names)).where(
            col(CallRow.episode_id) == episode_id
        )
    ).all()
    facts = [CallFacts(*r) for r in rows]
    return sorted(facts, key=call_order_key)


def _path_of(paths: list[PathInfo]) -> dict[str, PathInfo]:
    out: dict[str, PathInfo] = {}
    for p in sorted(paths, key=lambda p: p.state != "kept"):
        for cid in p.call_ids:
            out.setdefault(cid, p)
    return out


def _importance(f: CallFacts, cap: float) -> dict[str, float] | None:
    if not f.rollout_json:
        return None
    fields = orjson.loads(f.rollout_json)
    known = {k: v for k, v in fields.items() if k in Rollout.__dataclass_fields__}
    stats = importance_ratios(Rollout(**known), cap)
    if stats is None:
        return None
    return {"mean_ratio": stats.mean_ratio, "clipped_fraction": stats.clipped_fraction}


def _harness_evidence(f: CallFacts) -> str | None:
    """Why the call got its harness (`Call.extra["harness_evidence"]`, set at ingest)."""
    if not f.extra_json:
        return None
    value = orjson.loads(f.extra_json).get("harness_evidence")
    return value if isinstance(value, str) else None


def rows_for(
    facts: list[CallFacts], analysis: EpisodeAnalysis, settings: Settings = DEFAULT_SETTINGS
) -> list[dict[str, Any]]:
    """The explain rows of an analysed episode, in reconstruction order."""
    path_of = _path_of(analysis.paths)
    pinned: dict[str, list[dict[str, str]]] = {}
    for r in analysis.reasons:
        if r.call_id:
            pinned.setdefault(r.call_id, []).append({"code": str(r.code), "evidence": r.evidence})
    rows: list[dict[str, Any]] = []
    for f in facts:
        d = analysis.decisions.get(f.call_id)
        if d is None:
            continue
        p = path_of.get(f.call_id)
        rows.append(
            {
                "call": call_label(f),
                "call_id": f.call_id,
                "source": {"file": f.source_file, "line": f.line},
                "seq": f.seq,
                "endpoint": f.endpoint,
                "http_status": f.http_status,
                "role": d.role,
                "role_reason": base_role_reason(d.role_reason),
                "retry": retry_note(d.role_reason) or None,
                "caused": pinned.get(f.call_id, []),
                "state": d.state,
                "reason": d.reason,
                "parent_call": d.parent_call,
                "segment": d.segment,
                "retry_of": d.retry_of,
                "thread": d.thread,
                "linked_call": d.linked_call,
                "depth": d.depth,
                "match_ignored": d.match_ignored,
                "path": p.path_id if p else None,
                "path_why": p.why if p and p.why else None,
                "reward": p.reward if p else None,
                "advantage": p.advantage if p else None,
                "output_tokens": f.output_tokens,
                "importance": _importance(f, float(settings.is_ratio_cap)),
                "harness": f.harness,
                "harness_evidence": _harness_evidence(f),
            }
        )
    return rows


def explain_rows(
    session: Session, episode_id: str, settings: Settings = DEFAULT_SETTINGS
) -> list[dict[str, Any]]:
    """Per call: id, source, seq, role, state, reason, parent, segment, retry, thread, path,
    and the reviewers' comments on it (`comments`: reviewer, text, created_at; oldest first)."""
    from clawviz.store import comments_by_call

    analysis = episode_analysis(session, episode_id, settings)
    rows = rows_for(_facts(session, episode_id), analysis, settings)
    notes = comments_by_call(session, episode_id)
    for r in rows:
        r["comments"] = notes.get(r["call_id"], [])
    return rows


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:+.4g}" if x < 0 or x > 0 else "0"


def text_for(rows: list[dict[str, Any]], analysis: EpisodeAnalysis) -> str:
    """An indented tree, one call per line with its role, state and reason."""
    head = [
        f"episode {analysis.episode_id}: {analysis.status}"
        + (f" ({', '.join(r.code for r in analysis.reasons)})" if analysis.reasons else ""),
        f"  reward {'-' if analysis.reward is None else format_value(analysis.reward)}"
        f"  advantage {_fmt(analysis.advantage)}  segments {analysis.n_segments}"
        f"  settings {analysis.settings_hash}",
    ]
    by_id = {r["call_id"]: r for r in rows}
    head += [
        f"  - {r.code}: {r.evidence}"
        + (f" (at call {by_id[r.call_id]['call']})" if r.call_id in by_id else "")
        for r in analysis.reasons
    ]
    kids: dict[str | None, list[str]] = {}
    for r in rows:
        parent = r["parent_call"] if r["parent_call"] in by_id else None
        kids.setdefault(parent, []).append(r["call_id"])
    lines: list[str] = []
    stack = [(cid, 0) for cid in reversed(kids.get(None, []))]
    while stack:
        cid, depth = stack.pop()
        lines.append("  " * depth + _line(by_id[cid], by_id))
        stack.extend((k, depth + 1) for k in reversed(kids.get(cid, [])))
    return "\n".join(head + [""] + lines) + "\n"


def _line(r: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    def name(cid: str | None) -> str:
        if cid is None:
            return "-"
        other = by_id.get(cid)
        return f"call {other['call']}" if other else cid

    label = f"call {r['call']}"
    state = r["state"] + (f"({r['reason']})" if r["reason"] else "")
    parts = [label, r["role"], state]
    if r["segment"] is not None:
        parts.append(f"seg {r['segment']}")
    if r["retry"]:
        # The stored note: what it retries (identical re-send or harness retry), what replaced
        # it, and why the keeper was kept.
        parts.append(f"retry: {r['retry']}")
    elif r["retry_of"]:
        parts.append(f"retry of {name(r['retry_of'])}")
    if r["linked_call"]:
        parts.append(f"linked to {name(r['linked_call'])}")
    if r["role"] != "main" and r["role_reason"]:
        parts.append(f"why: {r['role_reason'][:70]}")
    elif r["role_reason"] and "; parent by rule " in r["role_reason"]:
        # A tolerance rule found this call's parent (recon/tree.py): say which and why.
        parts.append(r["role_reason"].split("; ", 1)[1][:110])
    if r["http_status"] is not None and not 200 <= r["http_status"] < 300:
        parts.append(f"HTTP {r['http_status']}")
    if r["advantage"] is not None:
        parts.append(f"A={_fmt(r['advantage'])}")
    if r["reason"] == "not_longest" and r["path_why"]:
        parts.append(f"lost: {r['path_why']}")
    parts += [f"CAUSED {c['code']}: {c['evidence']}" for c in r["caused"]]
    parts.append(f"[{r['source']['file']}:{r['source']['line']}]")
    return "  ".join(parts)


def explain_text(session: Session, episode_id: str, settings: Settings = DEFAULT_SETTINGS) -> str:
    """A readable indented tree of the episode's calls with state and reason per line."""
    analysis = episode_analysis(session, episode_id, settings)
    return text_for(rows_for(_facts(session, episode_id), analysis, settings), analysis)
