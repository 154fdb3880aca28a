"""Harness-neutral bookkeeping of one generated episode: its calls and what each one is meant to be.

Each `Spec` is one call the generator writes, with the role/state/reason it intends under
PIPELINE.md and the default settings. `label_episode` fills in what follows from the tree
(kept vs not_longest, segments) and the episode's status; `check_structure` re-derives every
parent from the wire messages alone and fails generation if the intended tree is not the one
the messages encode.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawviz.settings import DEFAULT_SETTINGS, Settings

Msg = dict[str, Any]


@dataclass
class Spec:
    """One call to write, with the decision the generator intends for it."""

    key: str
    thread: str
    role: str
    messages: list[Msg]
    response: Msg | None
    system: Any = ""
    tools: list[str] = field(default_factory=list)
    model: str = ""
    t_request: float = 0.0
    t_response: float = 0.0
    status: int = 200
    failure: str | None = None
    """failed_http | truncated_stream when the call failed."""
    state: str = ""
    reason: str | None = None
    parent: Spec | None = None
    retry_of: Spec | None = None
    linked: Spec | None = None
    segment: int | None = None
    output_tokens: int = 0
    stop_reason: str | None = None
    note: str = ""
    non_model: bool = False
    wire: dict[str, Any] = field(default_factory=dict)
    """Harness-specific facts the renderer needs (headers, stream flag, ids, ...)."""
    seq: int = 0
    file: str = ""
    line: int = 0

    @property
    def reply(self) -> Msg:
        """The response of a call that has one (the generator knows which do)."""
        assert self.response is not None, f"{self.key} has no response"
        return self.response

    @property
    def stop(self) -> str:
        """The stop reason of a call that has a response."""
        assert self.stop_reason is not None, f"{self.key} has no stop reason"
        return self.stop_reason

    @property
    def failed(self) -> bool:
        return self.failure is not None


@dataclass
class Thread:
    """One conversation (main agent, a sub-agent, a cron run): its history and where it ends."""

    name: str
    role: str
    system: Any
    tools: list[str]
    model: str
    clock: float
    messages: list[Msg] = field(default_factory=list)
    tip: Spec | None = None
    pending: list[Msg] = field(default_factory=list)
    """Messages (tool results, notifications) to send with the next request."""
    wire: dict[str, Any] = field(default_factory=dict)


@dataclass
class Spawn:
    """A sub-agent launch: the parent's tool call, how to run the child, what it reports."""

    call: dict[str, Any]
    run: Callable[..., str]
    report: str
    agent_id: str = ""
    done_at: float = 0.0
    """Clock time when the sub-agent's last call finished."""


@dataclass
class EpisodeMeta:
    """Identity and scoring facts of one attempt."""

    episode_id: str
    task_id: str
    harness: str
    attempt: int
    model_role: str
    model: str
    identity: str = "clawviz"
    """clawviz (clawviz.episode_id on every line) | header (session header only)."""
    session_id: str = ""
    mistakes: frozenset[str] = frozenset()
    quirks: tuple[str, ...] = ()
    has_result: bool = True
    file: str = ""


class Episode:
    """Collects the specs of one episode in creation order."""

    def __init__(self, meta: EpisodeMeta, rng: random.Random, t0: float) -> None:
        self.meta = meta
        self.rng = rng
        self.t0 = t0
        self.specs: list[Spec] = []
        self.reward: float | None = None
        self.checks: dict[str, float] = {}
        self.rubric: dict[str, float] | None = None
        self.workspace: Path | None = None

    def new_key(self) -> str:
        return f"c{len(self.specs) + 1:02d}"

    def add(self, spec: Spec) -> Spec:
        self.specs.append(spec)
        return spec

    def call(
        self,
        th: Thread,
        response: Msg | None,
        *,
        extra: list[Msg] | None = None,
        output_tokens: int = 0,
        stop_reason: str | None = None,
        duration: float | None = None,
        role: str | None = None,
        advance: bool = True,
        **kw: Any,
    ) -> Spec:
        """Send th.messages + pending (+ extra); on success the thread's history moves on."""
        messages = th.messages + th.pending + (extra or [])
        dur = duration if duration is not None else 0.8 + output_tokens * 0.015 + self.rng.random()
        spec = Spec(
            key=self.new_key(),
            thread=th.name,
            role=role or th.role,
            messages=copy.deepcopy(messages),
            response=copy.deepcopy(response),
            system=th.system,
            tools=list(th.tools),
            model=kw.pop("model", th.model),
            t_request=round(th.clock, 3),
            t_response=round(th.clock + dur, 3),
            parent=kw.pop("parent", th.tip),
            output_tokens=output_tokens,
            stop_reason=stop_reason,
            wire={**th.wire, **kw.pop("wire", {})},
            **kw,
        )
        th.clock = spec.t_response + 0.05 + self.rng.random() * 0.4
        if advance and not spec.failed and response is not None:
            th.messages = messages + [response]
            th.pending = []
            th.tip = spec
        return self.add(spec)


# ---------------------------------------------------------------- labelling


def _strip_cache_control(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cache_control(v) for v in obj]
    return obj


def label_episode(ep: Episode, settings: Settings = DEFAULT_SETTINGS) -> dict[str, Any]:
    """Fill kept/not_longest and segments on main calls; return the episode's intended verdict."""
    specs = sorted(ep.specs, key=lambda s: s.t_request)
    for n, s in enumerate(specs, 1):
        s.seq = n
    main = [s for s in specs if s.role == "main"]
    for s in main:
        if s.failed:
            s.state, s.reason = "failed", s.failure
    roots, children = _main_forest([s for s in main if not s.state])
    n_leaves = sum(_label_segment(seg, root, children) for seg, root in enumerate(roots))
    for s in main:
        if s.segment is None and s.parent is not None:
            s.segment = s.parent.segment
    for s in specs:
        if s.role != "main" and not s.state:
            s.state, s.reason = ("failed", s.failure) if s.failed else ("auxiliary", s.role)
    reasons = _intended_reasons(ep, main, n_leaves, settings)
    return {
        "status": "dropped" if reasons else "kept",
        "reasons": reasons,
        "n_main_leaves": n_leaves,
        "n_segments": len(roots),
    }


def _main_forest(live: list[Spec]) -> tuple[list[Spec], dict[str, list[Spec]]]:
    """Roots and children of the live (not failed) main calls, by their intended parents."""
    children: dict[str, list[Spec]] = {s.key: [] for s in live}
    roots = []
    for s in live:
        if s.parent is not None and s.parent.key in children:
            children[s.parent.key].append(s)
        else:
            roots.append(s)
    return roots, children


def _label_segment(seg: int, root: Spec, children: dict[str, list[Spec]]) -> int:
    """Keep the path with most generated tokens (latest on ties), prune the rest; leaf count."""
    paths = _paths(root, children)
    for p in paths:
        for c in p:
            c.segment = seg
    best = max(paths, key=lambda p: (sum(c.output_tokens for c in p), p[-1].t_request))
    keep = {c.key for c in best}
    for p in paths:
        for c in p:
            if c.key in keep:
                c.state, c.reason = "kept", None
            elif not c.state:
                c.state, c.reason = "pruned", "not_longest"
    return len(paths)


def _intended_reasons(
    ep: Episode, main: list[Spec], n_leaves: int, settings: Settings
) -> list[dict[str, str]]:
    """Every episode reason the generator meant, with its evidence, in PIPELINE §4 order."""
    reasons: list[dict[str, str]] = []
    if n_leaves > settings.max_leaves:
        reasons.append(
            {"code": "too_many_branches", "evidence": f"{n_leaves} > {settings.max_leaves}"}
        )
    if main and main[-1].failed:
        reasons.append({"code": "ended_in_error", "evidence": f"last main call {main[-1].failure}"})
    unsupported = [
        (name, s.seq)
        for s in main
        if s.response and not s.failed
        for name in (_tool_name(b) for b in _tool_calls(s.response))
        if name in settings.unsupported_tools
    ]
    if unsupported:
        name, seq = unsupported[0]
        reasons.append({"code": "unsupported_tool", "evidence": f"{name} in call {seq}"})
    if ep.reward is None:
        reasons.append({"code": "missing_reward", "evidence": "no results line"})
    elif ep.reward < settings.reward_threshold:
        reasons.append(
            {
                "code": "below_reward_threshold",
                "evidence": f"{ep.reward:.3f} < {settings.reward_threshold}",
            }
        )
    return reasons


def _paths(root: Spec, children: dict[str, list[Spec]]) -> list[list[Spec]]:
    """Every root-to-leaf path under `root`."""
    kids = children[root.key]
    if not kids:
        return [[root]]
    return [[root, *p] for k in kids for p in _paths(k, children)]


def _tool_name(block: dict[str, Any]) -> str:
    """Tool name of a tool_use block or OpenAI tool call (Tool Search wrappers unwrapped)."""
    if "function" not in block:
        return block.get("name", "")
    fn = block["function"]
    if fn["name"] == "tool_call":
        return json.loads(fn["arguments"]).get("id", "")
    return fn["name"]


def _tool_calls(msg: Msg) -> list[dict[str, Any]]:
    content = msg.get("content")
    blocks = (
        [b for b in content if b.get("type") == "tool_use"] if isinstance(content, list) else []
    )
    return blocks + list(msg.get("tool_calls") or [])


def check_structure(ep: Episode) -> None:
    """Re-derive each call's parent and retry siblings from wire messages; raise on mismatch."""
    specs = sorted((s for s in ep.specs if not s.non_model), key=lambda s: s.t_request)
    canon = {s.key: _strip_cache_control(s.messages) for s in specs}
    for i, s in enumerate(specs):
        best, best_len = None, 0
        for p in specs[:i]:
            if p.failed or p.response is None or p.t_response > s.t_request:
                continue
            ext = canon[p.key] + [_strip_cache_control(p.response)]
            if len(ext) > best_len and canon[s.key][: len(ext)] == ext:
                best, best_len = p, len(ext)
        want = s.parent
        if (best.key if best else None) != (want.key if want else None):
            raise AssertionError(
                f"{ep.meta.episode_id} {s.key} ({s.note or s.role}): intended parent "
                f"{want.key if want else None}, messages say {best.key if best else None}"
            )
        if s.retry_of is not None and canon[s.retry_of.key] != canon[s.key]:
            if s.retry_of.parent is not s.parent:
                raise AssertionError(f"{ep.meta.episode_id} {s.key}: retry with another parent")
