"""Two episodes side by side: their kept paths turn by turn, their final answers (pure, no UI).

A turn is one call of an episode's kept path (the kept root-to-leaf path of every segment, in
segment order), with the tool calls its reply made. Turn N of one episode stands beside turn N
of the other (main-path call order), so where two attempts part ways shows as the first row
whose tools differ. Which episode to compare with defaults to other attempts of the same task
in the same harness, then the same task in other harnesses, then anything (`compare_order`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from clawviz.recon.calldiff import SectionDiff, diff_lines
from clawviz.types import Call, EpisodeAnalysis, Message, State, call_label

ARGS_CHARS = 80
"""Characters of a tool call's arguments kept in its one-line summary."""
TEXT_CHARS = 160


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply: its name, a one-line summary of its arguments, and the whole
    arguments (canonical JSON) that two calls are compared on."""

    name: str
    args: str
    full: str = ""

    def __str__(self) -> str:
        return f"{self.name}({self.args})"


@dataclass(frozen=True)
class Turn:
    """One call of a kept path: what the model said and which tools it called."""

    number: int
    """1-based position along the kept path."""
    call_id: str
    label: str
    """How the app names the call (`types.call_label`)."""
    segment: int | None
    text: str
    """The reply's text, cut to TEXT_CHARS."""
    tools: tuple[ToolCall, ...]
    generated_tokens: int | None

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)


@dataclass(frozen=True)
class TurnPair:
    """Turn N of both episodes (None past the end of the shorter path)."""

    number: int
    left: Turn | None
    right: Turn | None

    @property
    def same_tools(self) -> bool:
        """Both turns exist and call the same tools with the same arguments, in order."""
        return (
            self.left is not None and self.right is not None and self.left.tools == self.right.tools
        )

    @property
    def verdict(self) -> str:
        if self.left is None or self.right is None:
            return "only left" if self.right is None else "only right"
        if self.same_tools:
            return "same"
        if self.left.tool_names == self.right.tool_names:
            return "other arguments"
        return "different"


@dataclass(frozen=True)
class Comparison:
    """Two episodes' kept paths aligned, and their final answers diffed."""

    left: list[Turn]
    right: list[Turn]
    pairs: list[TurnPair]
    left_answer: str
    right_answer: str
    answer_diff: SectionDiff

    @property
    def first_difference(self) -> int | None:
        """Number of the first turn pair that is not the same, None when all are."""
        return next((p.number for p in self.pairs if p.verdict != "same"), None)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def args_summary(value: Any, limit: int = ARGS_CHARS) -> str:
    """Tool arguments in one line: `key=value, ...` for an object, else compact JSON."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return _one_line(value, limit)
    if isinstance(value, dict):
        parts = [
            f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)}"
            for k, v in value.items()
        ]
        return _one_line(", ".join(parts), limit)
    return _one_line(json.dumps(value, ensure_ascii=False, default=str), limit)


def _blocks(message: Message | None) -> list[Any]:
    if message is None:
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def reply_text(message: Message | None) -> str:
    """The text blocks of a reply, joined."""
    return "\n".join(str(b.get("text", "")) for b in _blocks(message) if b.get("type") == "text")


def _canonical(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def tool_calls(message: Message | None) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(str(b.get("name", "?")), args_summary(b.get("input")), _canonical(b.get("input")))
        for b in _blocks(message)
        if b.get("type") == "tool_use"
    )


def kept_path(calls: Iterable[Call], analysis: EpisodeAnalysis | None) -> list[Call]:
    """The calls of every kept path, segment by segment, in call order along each path."""
    if analysis is None:
        return []
    by_id = {c.call_id: c for c in calls}
    kept = sorted(
        (p for p in analysis.paths if p.state == State.KEPT),
        key=lambda p: (p.segment, p.path_id),
    )
    out: list[Call] = []
    seen: set[str] = set()
    for p in kept:
        for cid in p.call_ids:
            if cid in by_id and cid not in seen:
                seen.add(cid)
                out.append(by_id[cid])
    return out


def turns(calls: Iterable[Call], analysis: EpisodeAnalysis | None) -> list[Turn]:
    """The kept path as turns."""
    path = kept_path(calls, analysis)
    decisions = analysis.decisions if analysis else {}
    return [
        Turn(
            i + 1,
            c.call_id,
            call_label(c),
            decisions[c.call_id].segment if c.call_id in decisions else None,
            _one_line(reply_text(c.response), TEXT_CHARS),
            tool_calls(c.response),
            c.generated_tokens,
        )
        for i, c in enumerate(path)
    ]


def final_answer(path: list[Call]) -> str:
    """The last assistant text of a kept path (walking back past tool-only replies)."""
    for c in reversed(path):
        text = reply_text(c.response).strip()
        if text:
            return text
    return ""


def compare(
    left_calls: list[Call],
    left_analysis: EpisodeAnalysis | None,
    right_calls: list[Call],
    right_analysis: EpisodeAnalysis | None,
) -> Comparison:
    """Align two episodes' kept paths turn by turn and diff their final answers."""
    lt, rt = turns(left_calls, left_analysis), turns(right_calls, right_analysis)
    n = max(len(lt), len(rt))
    pairs = [
        TurnPair(i + 1, lt[i] if i < len(lt) else None, rt[i] if i < len(rt) else None)
        for i in range(n)
    ]
    la = final_answer(kept_path(left_calls, left_analysis))
    ra = final_answer(kept_path(right_calls, right_analysis))
    return Comparison(
        lt, rt, pairs, la, ra, diff_lines(la.splitlines(), ra.splitlines(), name="final answer")
    )


@dataclass(frozen=True)
class Candidate:
    """An episode offered for comparison and why it comes where it does."""

    episode_id: str
    group: str
    """`same task, same harness` | `same task, other harness` | `other task`."""


def _attempt(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 10**9  # no attempt number: after the numbered ones


GROUPS = ("same task, same harness", "same task, other harness", "other task")


def compare_order(
    current: Mapping[str, Any], others: Iterable[Mapping[str, Any]]
) -> list[Candidate]:
    """Every other episode, nearest first: other attempts of the task in this harness, the
    task in other harnesses, then the rest; by attempt, then id, within a group."""
    task, harness = current.get("task_id"), current.get("harness")
    rows = []
    for r in others:
        eid = str(r["episode_id"])
        if eid == current.get("episode_id"):
            continue
        if task is not None and r.get("task_id") == task:
            g = 0 if r.get("harness") == harness else 1
        else:
            g = 2
        rows.append((g, str(r.get("task_id") or ""), _attempt(r.get("attempt")), eid))
    rows.sort()
    return [Candidate(eid, GROUPS[g]) for g, _, _, eid in rows]
