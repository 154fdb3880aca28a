"""The one list of edit rules: every way a harness re-sends a history other than as it was sent.

Strict prefix matching (PIPELINE §2) takes a call's parent to be the earlier call whose request
plus reply the call's messages start with. Real harnesses edit what they re-send: a context
block built for one request is gone from the next one, a prompt is kept in another form, a
resumed history lost a parallel tool call, a failed turn left a placeholder. Each such edit is a
rule here (`EDIT_RULES`: name, reason code, what it is, the recording that shows it). Three
places apply them, all from this list:

- the match view (`recon.matchview`): per request, the messages the harness keeps (drop,
  render and merge rules, kind `view`);
- the ignore patterns (`recon.markers`, kind `span`): spans removed before messages compare;
- the parent search (`recon.tree`, kinds `history` and `align`): when a request's history leaves
  every earlier path before its end, `align_history` aligns it with each candidate's request plus
  reply, anchored on content (the candidate's reply, by canonical message and tool-call ids),
  and every difference is an explained `Edit` of a rule here or an unexplained one.

`calldiff.call_edits` lists, for the explorer, the edits between a call and its parent with the
rule that explains each (or none). docs/DECISIONS.md ("Edit rules") lists every rule with its
recording.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from clawviz.recon.canonical import block_text, match_items
from clawviz.recon.markers import ALL_IGNORE_PATTERNS
from clawviz.types import Message

EditKind = Literal["view", "span", "history", "align", "diff"]


@dataclass(frozen=True)
class EditRule:
    """One edit a harness makes to what it re-sends, and why it does not break a chain."""

    code: str
    """The reason code (stored in `match_ignored`, shown in the inspector)."""
    name: str
    """A short human name."""
    kind: EditKind
    description: str
    recording: str
    """The committed recording (or test) that shows the edit."""


OC = "openclaw-2026.9.6"
EDIT_RULES: tuple[EditRule, ...] = (
    EditRule(
        "openclaw_request_context",
        "ignored context block",
        "view",
        "OpenClaw ends each request with a <<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> block built for "
        "that request alone; the next request has the reply where the block was",
        f"{OC}/gateway-session (every chat request)",
    ),
    EditRule(
        "openclaw_unkept_prompt",
        "dropped harness prompt",
        "view",
        "OpenClaw's own turn prompt (its retry after a failed call, a sub-agent's completion "
        "notice) is sent for one model call and not kept (2026.8's retry prompt `Continue from "
        "the current transcript after the latest tool result.`: compaction-after-failure, b1)",
        f"{OC}/gateway-session (m4-a2, ann1)",
    ),
    EditRule(
        "merged_assistant",
        "joined replies",
        "view",
        "after a dropped prompt the harness joins the reply to the previous assistant message",
        f"{OC}/gateway-session (ann1, ann2: replies joined in the next request)",
    ),
    EditRule(
        "openclaw_rerendered_prompt",
        "re-rendered prompt",
        "view",
        "OpenClaw keeps its sub-agents-settled prompt under an inter-session header and its "
        "heartbeat prompt as the poll line (2026.8's heartbeat prompt, the poll line, the "
        "event and the monitor prompt, too: heartbeat-after-compaction, hb)",
        f"{OC}/gateway-session (m7, hb)",
    ),
    EditRule(
        "openclaw_runtime_line",
        "runtime line",
        "view",
        "OpenClaw's `Runtime: agent=... | session=...` line names another session in a memory "
        "flush's private copy",
        f"{OC}/gateway-session (every request; flush names another session)",
    ),
    EditRule(
        "openclaw_queued_prompt",
        "queued prompt wrapper",
        "view",
        "after a rate limit OpenClaw re-sends the turn's prompt wrapped as a queued user "
        "message; the history keeps it unwrapped",
        f"{OC}/yield-heartbeat (b1)",
    ),
    EditRule(
        "openclaw_hidden_heartbeat",
        "hidden heartbeat",
        "view",
        "a heartbeat answered NO_REPLY is hidden from the main history; a flush's private copy "
        "keeps its poll line joined to the next user message",
        f"{OC}/gateway-session (flush)",
    ),
    EditRule(
        "openclaw_joined_placeholder",
        "placeholder joined to the reply",
        "view",
        "OpenClaw 2026.8 re-sends the reply of a retry after a failed turn with the failed "
        "turn's placeholder line `[assistant turn failed before producing content]` before it; "
        "the reply is read without that line",
        "openclaw-2026.8.2/compaction-after-failure (flush2, hb, c1: b1's reply)",
    ),
    EditRule(
        "openclaw_joined_flush_prompt",
        "joined flush prompt",
        "view",
        "OpenClaw 2026.8 re-sends its memory flush's prompt `Continue the OpenClaw runtime "
        "event.` joined to the prompt after it (a sub-agent announce, the heartbeat poll line) "
        "in one user message; it is read as the two messages the request that sent them had",
        "openclaw-2026.8.2/compaction-after-failure (b-500, b-overflow: ann's prompts; c1: hb's)",
    ),
    EditRule(
        "openclaw_send_time",
        "send time",
        "span",
        "the `[Tue 2026-12-01 09:31 UTC] ` prefix of a prompt re-sent after a rate limit carries "
        "the time of the re-send, the history the first one",
        f"{OC}/yield-heartbeat (c1)",
    ),
    EditRule(
        "claude_code_system_reminder",
        "system reminder",
        "span",
        "Claude Code's <system-reminder> spans (nested ones whole) change between otherwise "
        "identical turns",
        "claude-code-2.0.77/session (m6)",
    ),
    EditRule(
        "claude_code_billing_header",
        "billing-header line",
        "span",
        "Claude Code's `x-anthropic-billing-header:` line of the system prompt changes on every "
        "request",
        "claude-code-2.1.332/session (cc_version=2.1.332.cf6, .d99 in one session)",
    ),
    EditRule(
        "leading_context_block",
        "leading context-only message",
        "history",
        "Claude Code 2.0 opens the first request after a compaction with a user message of "
        "re-read attachments; the history it keeps starts at the summary",
        "claude-code-2.0.77/session (summary-2)",
    ),
    EditRule(
        "resume_dropped_tool_calls",
        "resumed history lost parallel tool calls",
        "align",
        "Claude Code 2.0 on --resume re-sends one branch of a reply with parallel tool calls: "
        "the assistant message lacks some tool calls and the next user message their results",
        "claude-code-2.0.77/session (m3, m5)",
    ),
    EditRule(
        "dropped_transient_message",
        "dropped transient message",
        "align",
        "a text-only user message the harness sent with the parent's request only (its last "
        "prompt before the reply) is gone from the re-sent history",
        "tests/test_edits.py (OpenClaw after a compaction, issue 29)",
    ),
    EditRule(
        "failed_turn_placeholder",
        "placeholder for a failed turn",
        "align",
        "where a turn failed the harness re-sends a placeholder (an empty assistant message, a "
        "synthetic error tool result) that the parent's request did not hold",
        "tests/test_edits.py (OpenClaw after a compaction, issue 29)",
    ),
    EditRule(
        "openclaw_flush_private_copy",
        "flush's private copy without tool turns",
        "history",
        "OpenClaw 2026.8 runs a memory flush (flush prompt in the system prompt) on a private "
        "copy of the history that leaves out the tool calls and tool results; its parent is the "
        "latest call whose request plus reply, without those messages, the copy starts with",
        "openclaw-2026.8.2/compaction-after-failure (flush1 under a2)",
    ),
    EditRule(
        "rerendered_summary_head",
        "re-rendered summary head",
        "align",
        "a compaction re-renders the head of the history as its summary: that is a segment "
        "boundary (a continuation root linked to its summary call), never an edit; no history "
        "is aligned across a changed first message",
        "pi-0.73.1/overflow-compaction (m4)",
    ),
    EditRule(
        "openclaw_rerendered_tool_call",
        "re-rendered tool call",
        "diff",
        "OpenClaw re-renders the history it re-sends: the parent's tool call comes back with "
        "another id or argument layout (the same call by name and canonical arguments)",
        f"{OC}/gateway-session (m2, m4, m6)",
    ),
    EditRule(
        "system_prompt_volatile",
        "volatile system prompt",
        "diff",
        "the tree matches on messages only (PIPELINE §2): a system prompt that changes between "
        "turns (OpenClaw's attempt comment, tool list) never breaks a chain",
        f"{OC}/gateway-session (ann1, hb, m7, flush)",
    ),
)
RULES: dict[str, EditRule] = {r.code: r for r in EDIT_RULES}
UNEXPLAINED = "unexplained_edit"
"""The code of an edit no rule explains."""

MAX_UNEXPLAINED = 2
"""Unexplained edits a content-anchored alignment may hold and still give a parent."""


def rule(code: str) -> EditRule:
    """The rule of a code (KeyError for a code not in `EDIT_RULES`)."""
    return RULES[code]


@dataclass(frozen=True)
class Edit:
    """One difference between a call's history and its parent's request plus reply."""

    code: str
    """A rule's code, or `UNEXPLAINED`."""
    index: int
    """The message of the call it concerns (0-based; -1: the system prompt)."""
    summary: str

    @property
    def explained(self) -> bool:
        return self.code != UNEXPLAINED

    def as_dict(self) -> dict[str, Any]:
        r = RULES.get(self.code)
        return {
            "rule": r.name if r else "no rule",
            "code": self.code,
            "explained": self.explained,
            "summary": self.summary,
        }


Items = Callable[[Message], tuple[str, list]]
"""Match items of a message with its role (`ItemMemo`)."""


class ItemMemo:
    """Match items per message object, computed on demand (messages stay alive meanwhile)."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[str, list]] = {}

    def __call__(self, message: Message) -> tuple[str, list]:
        got = self.memo.get(id(message))
        if got is None:
            role = "user" if message.get("role") == "tool" else str(message.get("role"))
            items = match_items(message, ignore_patterns=ALL_IGNORE_PATTERNS)
            got = self.memo[id(message)] = (role, items)
        return got


_TOOL_ITEMS = ("tool_use", "tool_result")
_PLACEHOLDER_TEXT = re.compile(
    r"^\s*(?:\[(?:openclaw|error|aborted|interrupted)\]"
    r"|\(no content\)|\[no content\]|\[assistant turn failed"
    r"|(?:the )?(?:previous |last )?(?:turn|request|response|model call) (?:failed|errored|was "
    r"aborted)"
    r"|no result provided|missing tool result)",
    re.IGNORECASE,
)


def dropped_tools(old: tuple[str, list], new: tuple[str, list]) -> int | None:
    """How many tool calls / results `new` lacks, if it is `old` with only some of them left."""
    if old[0] != new[0]:
        return None
    rest_old = [i for i in old[1] if i[0] not in _TOOL_ITEMS]
    rest_new = [i for i in new[1] if i[0] not in _TOOL_ITEMS]
    if rest_old != rest_new:
        return None
    pool = [i for i in old[1] if i[0] in _TOOL_ITEMS]
    n_old = len(pool)
    for item in (i for i in new[1] if i[0] in _TOOL_ITEMS):
        if item not in pool:
            return None
        pool.remove(item)
    return n_old - (len(new[1]) - len(rest_new)) or None


def is_placeholder(message: Message, items: Items) -> bool:
    """An assistant message with nothing in it, or a message whose only text (or tool result)
    is a harness's stand-in for a turn that failed."""
    role, its = items(message)
    if role == "assistant" and not its:
        return True
    if not its or any(i[0] not in ("text", "tool_result") for i in its):
        return False
    texts = [str(i[1]) for i in its]
    return all(_PLACEHOLDER_TEXT.search(_spaced(message, t)) for t in texts)


def _spaced(message: Message, squeezed: str) -> str:
    # Items hold text without whitespace; the pattern reads the text as sent.
    text = block_text(message.get("content"))
    if not text:
        for b in message.get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                text += block_text(b.get("content"))
    return text or squeezed


def is_transient(message: Message, items: Items) -> bool:
    """A user message of text only (a prompt, not a tool result)."""
    role, its = items(message)
    return role == "user" and bool(its) and all(i[0] == "text" for i in its)


def tool_ids(message: Message) -> set[str]:
    """Tool-call ids a message carries (tool calls and the results that answer them)."""
    out: set[str] = set()
    content = message.get("content")
    if not isinstance(content, list):
        return out
    for b in content:
        if isinstance(b, dict):
            tid = b.get("id") if b.get("type") == "tool_use" else b.get("tool_use_id")
            if isinstance(tid, str) and tid:
                out.add(tid)
    return out


@dataclass(frozen=True)
class Alignment:
    """A call's history aligned with a candidate parent's request plus reply."""

    covered: int
    """Messages of the call that stand for the candidate's request plus reply."""
    edits: tuple[Edit, ...]

    @property
    def unexplained(self) -> int:
        return sum(1 for e in self.edits if not e.explained)


def _excerpt(message: Message) -> str:
    """A message's text (tool results' text, else its block kinds), cut to 60 characters."""
    content = message.get("content")
    parts = [block_text(content)]
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            parts.append(block_text(b.get("content")))
        elif isinstance(b, dict) and b.get("type") == "tool_use":
            parts.append(f"{b.get('name')}({b.get('input')})")
    text = " ".join(" ".join(parts).split())
    if not text:
        kinds = [b.get("type", "?") for b in content or [] if isinstance(b, dict)]
        text = ", ".join(map(str, kinds)) or "empty"
    return text[:60] + ("..." if len(text) > 60 else "")


class _Aligner:
    """The walk of `align_history` (two positions, the edits found so far)."""

    def __init__(self, path: Sequence[Message], msgs: Sequence[Message], items: Items) -> None:
        self.path, self.msgs, self.items = path, msgs, items
        self.i = self.j = 0
        self.edits: list[Edit] = []

    def same(self, a: Message, b: Message) -> bool:
        return a is b or self.items(a) == self.items(b)

    def add(self, code: str, index: int, summary: str) -> None:
        self.edits.append(Edit(code, index, summary))

    def _explained_skip(self, i: int, j: int) -> bool:
        """Pass over a placeholder on the call's side, the parent's transient prompt, or both,
        when the histories meet again right after them (each an explained edit)."""
        path, msgs = self.path, self.msgs
        a, b = path[i], msgs[j]
        placeholder = is_placeholder(b, self.items)
        # Only the parent's last prompt (right before its reply) is the transient one.
        transient = is_transient(a, self.items) and i == len(path) - 2
        for di, dj in ((0, 1), (1, 0), (1, 1)):
            if (dj and not placeholder) or (di and not transient):
                continue
            if j + dj >= len(msgs) or not self.same(path[i + di], msgs[j + dj]):
                continue
            if dj:
                self.add("failed_turn_placeholder", j, f"message #{j + 1}: {_excerpt(b)}")
            if di:
                self.add(
                    "dropped_transient_message",
                    j,
                    f"before message #{j + 1}: the parent's prompt {_excerpt(a)!r} is not re-sent",
                )
            self.i, self.j = i + di, j + dj
            return True
        return False

    def step(self) -> bool:
        """One step; False when the histories part in a way no rule (or resync) covers."""
        path, msgs, i, j = self.path, self.msgs, self.i, self.j
        a, b = path[i], msgs[j]
        last = i == len(path) - 1
        if self.same(a, b):
            self.i, self.j = i + 1, j + 1
            return True
        lost = dropped_tools(self.items(a), self.items(b))
        if lost:
            self.add(
                "resume_dropped_tool_calls",
                j,
                f"message #{j + 1}: {lost} tool call(s) or result(s) of the parent's history "
                "are missing",
            )
            self.i, self.j = i + 1, j + 1
            return True
        if self._explained_skip(i, j):
            return True
        nxt_b = msgs[j + 1] if j + 1 < len(msgs) else None
        nxt_a = path[i + 1] if i + 1 < len(path) else None
        if last or i == 0 or j == 0:
            # The reply is the anchor: it must be re-sent, as is or by a rule. The first
            # message is the conversation's head (the task, or a compaction's summary: a
            # compaction re-renders the head, and that is a segment boundary, not an edit).
            return False
        if nxt_a is not None and self.same(nxt_a, b):
            self.add(UNEXPLAINED, j, f"before message #{j + 1}: {_excerpt(a)!r} is gone")
            self.i = i + 1
        elif nxt_b is not None and self.same(a, nxt_b):
            self.add(UNEXPLAINED, j, f"message #{j + 1}: {_excerpt(b)!r} was added")
            self.j = j + 1
        else:
            self.add(UNEXPLAINED, j, f"message #{j + 1}: {_excerpt(a)!r} became {_excerpt(b)!r}")
            self.i, self.j = i + 1, j + 1
        return sum(1 for e in self.edits if not e.explained) <= MAX_UNEXPLAINED


def align_history(
    path: Sequence[Message], msgs: Sequence[Message], items: Items
) -> Alignment | None:
    """`msgs` (a call's history) aligned with `path` (a candidate's request plus reply).

    Equal canonical messages align; every other difference is an `Edit`: a rule's (dropped tool
    calls, a dropped transient prompt, a failed turn's placeholder) or unexplained (a message
    gone, added or changed; at most `MAX_UNEXPLAINED`). The candidate's reply is the anchor: it
    must be re-sent, as is or with tool calls dropped, and when any edit is unexplained it must
    also carry the same tool-call ids (ids are unique per reply; text alone is not proof).
    None when `msgs` does not continue `path`.
    """
    if not path or len(path) > len(msgs) + len(path) // 2 + 1:
        return None
    w = _Aligner(path, msgs, items)
    while w.i < len(path):
        if w.j >= len(msgs) or not w.step():
            return None
    out = Alignment(w.j, tuple(w.edits))
    if out.unexplained:
        reply_ids = tool_ids(path[-1])
        if not reply_ids or not reply_ids & tool_ids(msgs[w.j - 1]):
            return None
    return out
