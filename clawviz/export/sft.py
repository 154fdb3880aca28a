"""SFT rows: one per kept root-to-leaf path of each segment, with a train flag per message.

The conversation of a path is its last call's request plus that call's reply. Along the path,
call i's reply sits at position `len(call_i.messages)` of every later request (the tree parent
is the call whose `messages + [response]` prefixes the child's messages, PIPELINE §2), so the
positions of the model's own replies come from the tree, not from guessing by text. Those
messages carry the reply as the model produced it (`call_i.response`, reasoning included; only
the tool-call ids are taken from the history, so the tool results still point at them) and are
the only ones with `train = true`. Everything else is context: the user's text, tool results,
harness-injected text, assistant turns the model did not produce in this path (a harness's
canned reply, an auxiliary call's reply kept in the history, messages before the first call).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clawviz.export.chat import assistant_message, history_message, openai_tools
from clawviz.export.source import EpisodeData
from clawviz.types import Call, Message, PathInfo


@dataclass
class Skip:
    """A kept path that produced no row, and why (a stable code plus evidence)."""

    episode_id: str
    path_id: str
    code: str
    evidence: str = ""


@dataclass
class PathRows:
    """The rows of one episode and what was skipped or could not be carried."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    omitted: dict[str, int] = field(default_factory=dict)
    trained_calls: list[tuple[int, list[str]]] = field(default_factory=list)
    """(segment, call ids trained by each row), for the dataset statistics."""
    shared_only: int = 0
    """RL rows not written: every output in them is trained by an earlier path's row."""


def shared_prefix(path: PathInfo, earlier: list[PathInfo]) -> int:
    """Number of leading calls `path` shares with an earlier kept path of its segment."""
    best = 0
    for other in earlier:
        if other.segment != path.segment:
            continue
        n = 0
        for a, b in zip(path.call_ids, other.call_ids, strict=False):
            if a != b:
                break
            n += 1
        best = max(best, n)
    return best


def prefix_id(episode_id: str, path: PathInfo, n_shared: int) -> str | None:
    """Id of the calls a path shares with an earlier path (None when it shares none)."""
    if n_shared == 0:
        return None
    return f"{episode_id}:{path.segment}:{path.call_ids[n_shared - 1]}"


def _merge(into: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _trained_positions(calls: list[Call]) -> tuple[list[int], str | None]:
    """Position of each call's reply in the last call's messages + reply, or why not."""
    last = calls[-1]
    n = len(last.messages) + 1
    positions = [len(c.messages) for c in calls]
    for c, pos in zip(calls, positions, strict=True):
        if pos >= n:
            return [], f"call {c.call_id} reply at {pos} beyond the last request ({n - 1})"
        if pos < n - 1 and last.messages[pos].get("role") != "assistant":
            return [], f"call {c.call_id} reply position {pos} holds a non-assistant message"
    if any(b <= a for a, b in zip(positions, positions[1:], strict=False)):
        return [], "reply positions do not increase along the path"
    return positions, None


def path_messages(calls: list[Call]) -> tuple[list[dict], list[bool], list[int], dict, str | None]:
    """OpenAI messages, train flags, the end index of each call's reply, omitted blocks."""
    positions, why = _trained_positions(calls)
    if why is not None:
        return [], [], [], {}, why
    last = calls[-1]
    assert last.response is not None  # sft_rows skips paths with a missing reply
    seq: list[Message] = [*last.messages, last.response]
    by_pos = dict(zip(positions, calls, strict=True))
    messages: list[dict[str, Any]] = []
    train: list[bool] = []
    ends: list[int] = []
    omitted: dict[str, int] = {}
    if last.system:
        messages.append({"role": "system", "content": last.system})
        train.append(False)
    for j, m in enumerate(seq):
        call = by_pos.get(j)
        if call is None:
            conv = history_message(m)
            messages.extend(conv.messages)
            train.extend([False] * len(conv.messages))
            _merge(omitted, conv.omitted)
            continue
        conv = assistant_message(call.response or {"role": "assistant", "content": []})
        msg = conv.messages[0]
        _merge(omitted, conv.omitted)
        if j < len(seq) - 1 and msg.get("tool_calls"):
            hist = assistant_message(m).messages[0].get("tool_calls") or []
            if len(hist) == len(msg["tool_calls"]):
                for tc, h in zip(msg["tool_calls"], hist, strict=True):
                    tc["id"] = h["id"]
        messages.append(msg)
        train.append(True)
        ends.append(len(messages))
    return messages, train, ends, omitted, None


def sft_rows(ep: EpisodeData, settings_hash: str) -> PathRows:
    """SFT rows of one episode's kept paths (one per path; each segment has its own paths)."""
    out = PathRows()
    done: list[PathInfo] = []
    for path in ep.kept_paths:
        calls = [ep.calls.get(cid) for cid in path.call_ids]
        if not calls or any(c is None for c in calls):
            out.skipped.append(Skip(ep.episode_id, path.path_id, "calls_missing"))
            continue
        ready = [c for c in calls if c is not None]
        if any(c.response is None for c in ready):
            out.skipped.append(Skip(ep.episode_id, path.path_id, "no_response"))
            continue
        messages, train, ends, omitted, why = path_messages(ready)
        if why is not None:
            out.skipped.append(Skip(ep.episode_id, path.path_id, "history_mismatch", why))
            continue
        n_shared = shared_prefix(path, done)
        done.append(path)
        _merge(out.omitted, omitted)
        last = ready[-1]
        out.rows.append(
            {
                "format": "sft",
                "row_id": f"{ep.episode_id}/{path.path_id}",
                "episode_id": ep.episode_id,
                "task_id": ep.task_id,
                "harness": ep.harness,
                "model": ep.model,
                "attempt": ep.attempt,
                "group": ep.group,
                "segment": path.segment,
                "path_id": path.path_id,
                "status": ep.status,
                "reasons": [r.code for r in ep.reasons],
                "reward": ep.reward,
                "advantage": path.advantage,
                "settings_hash": settings_hash,
                "call_ids": list(path.call_ids),
                "messages": messages,
                "tools": openai_tools(ep.tools.get(last.call_id)),
                "train": train,
                "prefix_id": prefix_id(ep.episode_id, path, n_shared),
                "prefix_messages": ends[n_shared - 1] if n_shared else 0,
            }
        )
        out.trained_calls.append((path.segment, list(path.call_ids)))
    return out
