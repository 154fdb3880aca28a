"""SFT rows: one per kept root-to-leaf path of each segment, with a train flag per message.

The conversation of a path is its last call's request plus that call's reply. Along the path,
call i's reply sits at position `len(call_i.messages)` of every later request (less a trailing
message the harness sent with that request only) (the tree parent
is the call whose `messages + [response]` prefixes the child's messages, PIPELINE §2), so the
positions of the model's own replies come from the tree, not from guessing by text. Those
messages carry the reply as the model produced it (`call_i.response`, reasoning included; only
the tool-call ids are taken from the history, so the tool results still point at them) and are
the only ones with `train = true`. Everything else is context: the user's text, tool results,
harness-injected text, assistant turns the model did not produce in this path (a harness's
canned reply, an auxiliary call's reply kept in the history, messages before the first call).

A harness that rewrites its history breaks that: OpenClaw joins the replies around a prompt it
does not keep into one message, or leaves a reply out. Where a later request no longer holds a
reply of the path as sent (same position, same canonical message), the path is split there
(`split_path`): each row is then one conversation the model saw, and every reply of the path is
trained in exactly one row (`split`, `n_splits`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from clawviz.export.chat import assistant_message, history_message, openai_tools, tool_call_ids
from clawviz.export.source import EpisodeData
from clawviz.recon import ALL_IGNORE_PATTERNS, match_key, match_view
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


def row_header(
    ep: EpisodeData, path: PathInfo, fmt: str, row_id: str, settings_hash: str
) -> dict[str, Any]:
    """The columns every exported row starts with (SFT and RL alike, docs/EXPORT.md "Columns
    both formats share"): the attempt, its group, the path and the episode's verdict. Each
    format adds its `advantage` and its own columns."""
    return {
        "format": fmt,
        "row_id": row_id,
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
        "settings_hash": settings_hash,
    }


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


def exportable_paths(
    ep: EpisodeData, out: PathRows, problem: Callable[[list[Call]], tuple[str, ...] | None]
) -> Iterator[tuple[PathInfo, list[Call], int]]:
    """Each kept path of `ep` that can make rows (SFT and RL alike), with its calls and the
    number of leading calls it shares with the paths before it (`shared_prefix`). A path with
    a call not loaded is skipped as `calls_missing`, one that `problem` names (a code and its
    evidence) as that; both are noted in `out.skipped`."""
    done: list[PathInfo] = []
    for path in ep.kept_paths:
        calls = [ep.calls.get(cid) for cid in path.call_ids]
        if not calls or any(c is None for c in calls):
            out.skipped.append(Skip(ep.episode_id, path.path_id, "calls_missing"))
            continue
        ready = [c for c in calls if c is not None]
        why = problem(ready)
        if why is not None:
            out.skipped.append(Skip(ep.episode_id, path.path_id, *why))
            continue
        n_shared = shared_prefix(path, done)
        done.append(path)
        yield path, ready, n_shared


def _no_response(calls: list[Call]) -> tuple[str] | None:
    """SFT trains every reply of a path: a call without one leaves nothing to train."""
    return ("no_response",) if any(c.response is None for c in calls) else None


def prefix_id(episode_id: str, path: PathInfo, n_shared: int) -> str | None:
    """Id of the calls a path shares with an earlier path (None when it shares none)."""
    if n_shared == 0:
        return None
    return f"{episode_id}:{path.segment}:{path.call_ids[n_shared - 1]}"


def _merge(into: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


class KeyMemo:
    """`match_key` of messages already keyed in one episode, by object identity.

    The calls of an episode share their message objects (loaded once per hash), so each
    message of a path is keyed once however many later requests hold it. The memo keeps the
    messages alive, so an id is never reused while it is held."""

    def __init__(self) -> None:
        self._keys: dict[int, tuple[Message, str]] = {}

    def key(self, m: Message) -> str:
        got = self._keys.get(id(m))
        if got is None:
            got = self._keys[id(m)] = (m, _key(m))
        return got[1]


def _reply_position(call: Call, later: Call, memo: KeyMemo | None = None) -> int | None:
    """Where `call`'s reply sits in `later`'s request, or None when it is not there as sent.

    The reply follows the messages of `call`'s request that the harness re-sends: all of them,
    or all but the trailing ones built for that request only (OpenClaw's context block, which
    matching leaves out too, `matchview.match_view`). The message there must be the reply in
    the tree's canonical form (`canonical.match_key`): a harness that merged it with another
    reply, or left it out, no longer holds it (OpenClaw joins the replies around a prompt it
    does not keep).
    """
    if call.response is None:
        return None
    memo = memo if memo is not None else KeyMemo()
    response = call.response
    want: str | None = None
    p = len(call.messages)
    while True:
        if p < len(later.messages):
            m = later.messages[p]
            if m.get("role") == "assistant":
                # Equal messages have equal keys: the tolerant key only for those that differ.
                if m is response or m == response:
                    return p
                if want is None:
                    want = memo.key(response)
                if memo.key(m) == want:
                    return p
        if p == 0 or match_view(call.messages[p - 1 : p])[0]:
            return None
        p -= 1  # that message was sent with `call`'s request only (may be left out later)


def _key(m: Message) -> str:
    return match_key(m, ignore_patterns=ALL_IGNORE_PATTERNS)


def _trained_positions(
    calls: list[Call], memo: KeyMemo | None = None
) -> tuple[list[int], str | None]:
    """Position of each call's reply in the last call's messages + reply, or why not."""
    last = calls[-1]
    positions = []
    for c in calls[:-1]:
        pos = _reply_position(c, last, memo)
        if pos is None:
            return [], f"call {c.call_id}'s reply is not in the request of {last.call_id}"
        positions.append(pos)
    positions.append(len(last.messages))
    if any(b <= a for a, b in zip(positions, positions[1:], strict=False)):
        return [], "reply positions do not increase along the path"
    return positions, None


def split_path(
    calls: list[Call], memo: KeyMemo | None = None
) -> tuple[list[tuple[int, int]], list[int] | None]:
    """The path's calls as [start, end) runs, each one conversation that holds every reply,
    and the reply positions of the whole path when one run holds it (None otherwise).

    A run grows while the next call's request still holds each reply of the run where the
    tree places it; where it does not (the harness rewrote its history), the run ends and the
    next starts, so every reply is trained once, in a context the model saw.
    """
    memo = memo if memo is not None else KeyMemo()
    positions, why = _trained_positions(calls, memo)
    if why is None:
        return [(0, len(calls))], positions  # the usual case: one conversation holds it all
    runs: list[tuple[int, int]] = []
    start = 0
    for k in range(1, len(calls)):
        if _trained_positions(calls[start : k + 1], memo)[1] is not None:
            runs.append((start, k))
            start = k
    runs.append((start, len(calls)))
    return runs, None


def path_messages(
    calls: list[Call], memo: KeyMemo | None = None, positions: list[int] | None = None
) -> tuple[list[dict], list[bool], list[int], dict, str | None]:
    """OpenAI messages, train flags, the end index of each call's reply, omitted blocks.

    `positions`: the replies' positions when `split_path` already found them for these calls."""
    if positions is None:
        positions, why = _trained_positions(calls, memo)
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
            hist = tool_call_ids(m)
            if len(hist) == len(msg["tool_calls"]):
                for tc, h in zip(msg["tool_calls"], hist, strict=True):
                    tc["id"] = h
        messages.append(msg)
        train.append(True)
        ends.append(len(messages))
    return messages, train, ends, omitted, None


def sft_rows(ep: EpisodeData, settings_hash: str) -> PathRows:
    """SFT rows of one episode's kept paths (one per path; each segment has its own paths)."""
    out = PathRows()
    memo = KeyMemo()
    for path, ready, n_shared in exportable_paths(ep, out, _no_response):
        runs, positions = split_path(ready, memo)
        for k, (start, end) in enumerate(runs):
            row = _row(
                ep, path, ready[start:end], settings_hash, out, start, n_shared, memo, positions
            )
            if row is None:
                continue
            if len(runs) > 1:
                row["row_id"] += f"/{k}"
            row["split"], row["n_splits"] = k, len(runs)
            out.rows.append(row)
        out.trained_calls.append((path.segment, list(path.call_ids)))
    return out


def _row(
    ep: EpisodeData,
    path: PathInfo,
    calls: list[Call],
    settings_hash: str,
    out: PathRows,
    start: int,
    n_shared: int,
    memo: KeyMemo | None = None,
    positions: list[int] | None = None,
) -> dict[str, Any] | None:
    """The SFT row of the run of a path's calls from `start`; None when an earlier row trains
    all of it (`n_shared`: leading calls of the path an earlier path trains; `positions`:
    the replies' positions when the run is the whole path)."""
    messages, train, ends, omitted, why = path_messages(calls, memo, positions)
    if why is not None:
        out.skipped.append(Skip(ep.episode_id, path.path_id, "history_mismatch", why))
        return None
    shared = max(0, min(n_shared - start, len(calls)))
    if shared == len(calls):
        out.shared_only += 1
        return None
    _merge(out.omitted, omitted)
    last = calls[-1]
    return {
        **row_header(ep, path, "sft", f"{ep.episode_id}/{path.path_id}", settings_hash),
        "advantage": path.advantage,
        "call_ids": [c.call_id for c in calls],
        "messages": messages,
        "tools": openai_tools(ep.tools.get(last.call_id)),
        "train": train,
        "prefix_id": prefix_id(ep.episode_id, path, start + shared) if shared else None,
        "prefix_messages": ends[shared - 1] if shared else 0,
    }
