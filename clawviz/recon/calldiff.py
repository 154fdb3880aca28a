"""A call's request diffed against its parent's request plus the parent's reply (pure, no UI).

Three sections are diffed line by line (difflib): the system prompt, the tools offered and the
messages. The parent side of the messages is the parent's request followed by its reply, so a
clean continuation shows only the turns the harness appended. Long unchanged runs are folded;
lines of a message that tree matching left out or read in its kept form
(`CallDecision.match_ignored`, `recon.matchview`) are marked with that rule's code instead of
counting as a change.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from clawviz.recon.canonical import strip_patterns
from clawviz.recon.edits import RULES, UNEXPLAINED, Edit, ItemMemo, align_history
from clawviz.recon.markers import ALL_IGNORE_PATTERNS
from clawviz.recon.matchview import DROP_RULES, match_view
from clawviz.recon.tree import history_messages
from clawviz.types import Call, Message

LineKind = Literal["same", "add", "del", "fold"]
CONTEXT = 3
"""Unchanged lines kept on each side of a change; longer unchanged runs are folded."""


@dataclass(frozen=True)
class DiffLine:
    """One line of a section diff (`fold` stands for `folded` unchanged lines)."""

    kind: LineKind
    text: str = ""
    old_no: int | None = None
    new_no: int | None = None
    ignored: str = ""
    """The matching rule (code) that left this added or removed line out of tree matching."""
    folded: int = 0


@dataclass(frozen=True)
class SectionDiff:
    """The diff of one part of the request (system prompt, tools or messages)."""

    name: str
    lines: list[DiffLine]
    old_lines: int
    new_lines: int

    @property
    def added(self) -> int:
        return sum(1 for d in self.lines if d.kind == "add" and not d.ignored)

    @property
    def removed(self) -> int:
        return sum(1 for d in self.lines if d.kind == "del" and not d.ignored)

    @property
    def ignored(self) -> int:
        return sum(1 for d in self.lines if d.kind in ("add", "del") and d.ignored)

    @property
    def changed(self) -> bool:
        return self.added + self.removed > 0

    def text(self) -> str:
        """The diff as plain unified-style text (`+`, `-`, `~` for ignored, ` `, folds)."""
        out = []
        for d in self.lines:
            if d.kind == "fold":
                out.append(f"… {d.folded:,} unchanged lines …")
            else:
                mark = {"same": " ", "add": "+", "del": "-"}[d.kind]
                out.append((f"~{mark}" if d.ignored else mark) + d.text)
        return "\n".join(out)


@dataclass(frozen=True)
class IgnoredNote:
    """One matching rule applied to a message of either side (shown beside the diff)."""

    side: Literal["call", "parent"]
    message: int
    """1-based message number in that side's request."""
    code: str
    why: str
    excerpt: str


@dataclass(frozen=True)
class CallDiff:
    """A call against its parent: the three section diffs and the ignored parts."""

    call_id: str
    parent_id: str
    system: SectionDiff
    tools: SectionDiff
    messages: SectionDiff
    notes: list[IgnoredNote] = field(default_factory=list)

    @property
    def sections(self) -> tuple[SectionDiff, SectionDiff, SectionDiff]:
        return (self.system, self.tools, self.messages)


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(
            str(b.get("text", ""))
            if isinstance(b, dict) and b.get("type") == "text"
            # A non-text block inside a tool result is shown as its JSON.
            else json.dumps(b, ensure_ascii=False, sort_keys=True, default=str)
            for b in value
        )
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _input_lines(value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value.splitlines() or [""]
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str).split("\n")


def block_lines(block: Any) -> list[str]:
    """One content block as text lines (a tool call is its name then its JSON arguments)."""
    if isinstance(block, str):
        return block.splitlines() or [""]
    if not isinstance(block, dict):
        return [json.dumps(block, ensure_ascii=False, default=str)]
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", "")).splitlines() or [""]
    if kind == "thinking":
        return ["[thinking]", *(str(block.get("thinking", "")).splitlines())]
    if kind == "redacted_thinking":
        return ["[redacted thinking]"]
    if kind == "image":
        return ["[image]"]
    if kind == "tool_use":
        head = f"[tool call] {block.get('name', '?')} ({block.get('id', '')})"
        return [head, *_input_lines(block.get("input"))]
    if kind == "tool_result":
        err = " error" if block.get("is_error") else ""
        head = f"[tool result{err}] ({block.get('tool_use_id', '')})"
        return [head, *(_text_of(block.get("content")).splitlines() or [""])]
    return [json.dumps(block, ensure_ascii=False, sort_keys=True, default=str)]


HEADER = "── #{n} {role} ──"


def message_lines(index: int, message: Message) -> list[str]:
    """A message as text lines under a `── #N role ──` header (N counts from 1)."""
    lines = [HEADER.format(n=index + 1, role=message.get("role", "?"))]
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    for b in content or []:
        lines.extend(block_lines(b))
    return lines


def tool_lines(tools: Sequence[Any]) -> list[str]:
    """Tool definitions (or bare names) as lines: a `── name ──` header then the definition."""
    lines: list[str] = []
    for t in tools:
        if not isinstance(t, dict):
            lines.append(str(t))
            continue
        inner = t.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else t
        name = fn.get("name", "?")
        body = {k: v for k, v in fn.items() if k != "name"}
        if fn is not t:
            body |= {k: v for k, v in t.items() if k not in ("function", "type")}
        lines.append(f"── {name} ──")
        text = json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True, default=str)
        lines.extend(text.split("\n"))
    return lines


@dataclass
class _Conversation:
    lines: list[str]
    keys: list[str]
    """What lines are matched on: a header without its message number, so a message dropped
    or inserted earlier does not make every later header a change."""
    owner: list[int]
    """The 0-based message each line belongs to."""

    def starts(self) -> list[int]:
        """Line index where each message starts, plus the end."""
        out = [n for n in range(len(self.owner)) if n == 0 or self.owner[n] != self.owner[n - 1]]
        return out + [len(self.owner)]

    def message_keys(self) -> list[str]:
        s = self.starts()
        return ["\n".join(self.keys[s[k] : s[k + 1]]) for k in range(len(s) - 1)]


_TOOL_ID = re.compile(r"^(\[tool (?:call\] \S+|result(?: error)?\])) \([^()\n]*\)$")
"""The id at the end of a tool call's or tool result's head line (`block_lines`)."""


def _key_line(line: str) -> str:
    """What a line is matched on: a tool call's or result's head without its id (OpenClaw
    re-renders ids in the history it re-sends; rule `openclaw_rerendered_tool_call`)."""
    if line.startswith("[tool "):
        m = _TOOL_ID.match(line)
        if m:
            return m.group(1)
    return line


def _conversation(messages: Iterable[Message]) -> _Conversation:
    conv = _Conversation([], [], [])
    for i, m in enumerate(messages):
        ml = message_lines(i, m)
        conv.lines.extend(ml)
        conv.keys.append("\x00" + str(m.get("role", "?")))
        conv.keys.extend(_key_line(x) for x in ml[1:])
        conv.owner.extend([i] * len(ml))
    return conv


DROP_CODES = frozenset(r.code for r in DROP_RULES)


def _dropped(items: Iterable[dict[str, Any]]) -> set[int]:
    return {int(it.get("index", 0)) for it in items if it.get("code") in DROP_CODES}


def _unmatchable(conv: _Conversation, messages: set[int], side: str) -> None:
    for n, owner in enumerate(conv.owner):
        if owner in messages:
            conv.keys[n] = f"\x00{side}-dropped-{owner}-{n}"


RERENDERED = "openclaw_rerendered_tool_call"
BILLING = "claude_code_billing_header"


def _rerendered_notes(old: _Conversation, new: _Conversation) -> list[IgnoredNote]:
    """Messages of the call that are a parent's message with tool-call ids re-rendered: drawn
    as unchanged (their lines match without ids) and named with the rule."""
    s_old, s_new = old.starts(), new.starts()
    raw_old = {"\n".join(old.lines[s_old[k] + 1 : s_old[k + 1]]) for k in range(len(s_old) - 1)}
    keys_old = set(old.message_keys())
    out = []
    for k, key in enumerate(new.message_keys()):
        raw = "\n".join(new.lines[s_new[k] + 1 : s_new[k + 1]])
        if raw != key.split("\n", 1)[-1] and key in keys_old and raw not in raw_old:
            out.append(
                IgnoredNote(
                    "call",
                    k + 1,
                    RERENDERED,
                    RULES[RERENDERED].description,
                    new.lines[s_new[k] + 1][:80] if s_new[k] + 1 < s_new[k + 1] else "",
                )
            )
    return out


def _billing_lines(lines: list[str]) -> dict[int, str]:
    return {n: BILLING for n, x in enumerate(lines) if "x-anthropic-billing-header:" in x}


def _fold(lines: list[DiffLine], context: int) -> list[DiffLine]:
    """Replace each run of unchanged lines longer than the context it keeps by one fold line."""
    out: list[DiffLine] = []
    i = 0
    while i < len(lines):
        if lines[i].kind != "same":
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].kind == "same":
            j += 1
        run = lines[i:j]
        head = context if i > 0 else 0
        tail = context if j < len(lines) else 0
        if len(run) > head + tail + 1:
            out.extend(run[:head])
            out.append(DiffLine("fold", folded=len(run) - head - tail))
            out.extend(run[len(run) - tail :])
        else:
            out.extend(run)
        i = j
    return out


@dataclass
class _Sides:
    """Both sides of a diff: shown lines, matched keys and the ignored rule per line."""

    old: list[str]
    new: list[str]
    old_keys: list[str]
    new_keys: list[str]
    old_ignored: dict[int, str]
    new_ignored: dict[int, str]

    def same(self, i: int, j: int) -> DiffLine:
        return DiffLine("same", self.new[j], i + 1, j + 1)

    def lines(self, a0: int, a1: int, b0: int, b1: int) -> list[DiffLine]:
        """The line diff of old[a0:a1] against new[b0:b1] (unfolded)."""
        ka, kb = self.old_keys, self.new_keys
        # A long shared head and tail (the history both requests carry) skip the matcher.
        pre = 0
        while a0 + pre < a1 and b0 + pre < b1 and ka[a0 + pre] == kb[b0 + pre]:
            pre += 1
        suf = 0
        while a1 - suf > a0 + pre and b1 - suf > b0 + pre and ka[a1 - 1 - suf] == kb[b1 - 1 - suf]:
            suf += 1
        out = [self.same(a0 + k, b0 + k) for k in range(pre)]
        a0, b0 = a0 + pre, b0 + pre
        matcher = difflib.SequenceMatcher(
            None, ka[a0 : a1 - suf], kb[b0 : b1 - suf], autojunk=False
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                out.extend(self.same(a0 + i1 + k, b0 + j1 + k) for k in range(i2 - i1))
                continue
            for n in range(a0 + i1, a0 + i2):
                out.append(DiffLine("del", self.old[n], n + 1, None, self.old_ignored.get(n, "")))
            for n in range(b0 + j1, b0 + j2):
                out.append(DiffLine("add", self.new[n], None, n + 1, self.new_ignored.get(n, "")))
        out.extend(self.same(a1 - suf + k, b1 - suf + k) for k in range(suf))
        return out


def diff_lines(
    old: list[str],
    new: list[str],
    *,
    name: str = "",
    old_ignored: dict[int, str] | None = None,
    new_ignored: dict[int, str] | None = None,
    context: int = CONTEXT,
) -> SectionDiff:
    """Line diff of two texts; `*_ignored` maps a line number (0-based) to the rule that
    left it out of matching, so a change there is marked instead of counted."""
    sides = _Sides(old, new, old, new, old_ignored or {}, new_ignored or {})
    return SectionDiff(
        name, _fold(sides.lines(0, len(old), 0, len(new)), context), len(old), len(new)
    )


def _message_diff(old: _Conversation, new: _Conversation, sides: _Sides) -> list[DiffLine]:
    """Messages aligned first (a moved reply stays one message), then lines inside changes."""
    starts_a, starts_b = old.starts(), new.starts()
    out: list[DiffLine] = []
    matcher = difflib.SequenceMatcher(None, old.message_keys(), new.message_keys(), autojunk=False)
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out.extend(sides.lines(starts_a[i1], starts_a[i2], starts_b[j1], starts_b[j2]))
    return out


def _ignored_by_message(items: Iterable[dict[str, Any]]) -> dict[int, str]:
    codes: dict[int, list[str]] = {}
    for it in items:
        codes.setdefault(int(it.get("index", 0)), []).append(str(it.get("code", "")))
    return {i: ", ".join(dict.fromkeys(c)) for i, c in codes.items()}


def _by_line(owner: list[int], by_message: dict[int, str]) -> dict[int, str]:
    return {n: by_message[m] for n, m in enumerate(owner) if m in by_message}


def call_diff(
    call: Call,
    parent: Call,
    *,
    call_ignored: Sequence[dict[str, Any]] = (),
    parent_ignored: Sequence[dict[str, Any]] = (),
    call_tools: Sequence[Any] | None = None,
    parent_tools: Sequence[Any] | None = None,
    context: int = CONTEXT,
) -> CallDiff:
    """Diff `call`'s request against `parent`'s request plus its reply.

    `*_ignored` are the decisions' `match_ignored` items (message index 0-based); `*_tools`
    the full tool definitions of the raw requests (the calls hold only the tool names).
    """
    old_sys, new_sys = parent.system.splitlines(), call.system.splitlines()
    # Claude Code's billing-header line changes on every request: marked with its rule.
    system = diff_lines(
        old_sys,
        new_sys,
        name="system prompt",
        old_ignored=_billing_lines(old_sys),
        new_ignored=_billing_lines(new_sys),
        context=context,
    )
    tools = diff_lines(
        tool_lines(parent_tools if parent_tools is not None else parent.tools),
        tool_lines(call_tools if call_tools is not None else call.tools),
        name="tools",
        context=context,
    )
    before = list(parent.messages) + ([parent.response] if parent.response else [])
    old, new = _conversation(before), _conversation(call.messages)
    # A message matching drops (a request's own context block) stands for nothing on the other
    # side: it never aligns, so the reply after it meets its copy in the call's history.
    _unmatchable(old, _dropped(parent_ignored), "parent")
    _unmatchable(new, _dropped(call_ignored), "call")
    sides = _Sides(
        old.lines,
        new.lines,
        old.keys,
        new.keys,
        _by_line(old.owner, _ignored_by_message(parent_ignored)),
        _by_line(new.owner, _ignored_by_message(call_ignored)),
    )
    messages = SectionDiff(
        "messages", _fold(_message_diff(old, new, sides), context), len(old.lines), len(new.lines)
    )
    sides_items: tuple[tuple[Literal["call", "parent"], Sequence[dict[str, Any]]], ...] = (
        ("call", call_ignored),
        ("parent", parent_ignored),
    )
    notes = [
        IgnoredNote(
            side,
            int(it.get("index", 0)) + 1,
            str(it.get("code", "")),
            str(it.get("why", "")),
            str(it.get("excerpt", "")),
        )
        for side, items in sides_items
        for it in items
    ]
    notes += _rerendered_notes(old, new)
    return CallDiff(call.call_id, parent.call_id, system, tools, messages, notes)


# -- the edits between a call and its parent (the explorer's per-call `edits`) -----------------


def _system_edits(call: Call, parent: Call) -> list[Edit]:
    if call.system == parent.system:
        return []
    if strip_patterns(call.system, ALL_IGNORE_PATTERNS) == strip_patterns(
        parent.system, ALL_IGNORE_PATTERNS
    ):
        billing = "x-anthropic-billing-header:" in call.system + parent.system
        code = "claude_code_billing_header" if billing else "claude_code_system_reminder"
        return [Edit(code, -1, "system prompt: only its volatile spans changed")]
    return [
        Edit("system_prompt_volatile", -1, "system prompt changed (the tree does not match on it)")
    ]


def _ignored_edits(items: Iterable[dict[str, Any]], side: str) -> list[Edit]:
    out = []
    for it in items:
        code = str(it.get("code", ""))
        index = int(it.get("index", 0))
        what = f"{side} message #{index + 1}: {it.get('excerpt', '')}"
        out.append(Edit(code if code in RULES else UNEXPLAINED, index, what))
    return out


def _has_tool_items(message: Message, items: ItemMemo) -> bool:
    return any(i[0] in ("tool_use", "tool_result") for i in items(message)[1])


def call_edits(
    call: Call,
    parent: Call,
    *,
    call_ignored: Sequence[dict[str, Any]] = (),
    parent_ignored: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Every edit between `call`'s request and `parent`'s request plus reply: dicts with `rule`
    (its name), `code`, `explained` and `summary`, in the order system prompt, the call's parts
    the match view left out, the parent's, then the history (`recon.edits.align_history`, the
    alignment the parent search uses) and the re-rendered tool calls inside it.

    `*_ignored` are the decisions' `match_ignored` items. An edit no rule explains has code
    `unexplained_edit` (`explained` False)."""
    edits = _system_edits(call, parent) + _ignored_edits(call_ignored, "call")
    # The parent's own context block is the one every request drops: listed once, on the call.
    edits += [
        e
        for e in _ignored_edits(parent_ignored, "parent")
        if e.code not in ("openclaw_request_context", "merged_assistant")
    ]
    items = ItemMemo()
    msgs, _ = match_view(history_messages(call.messages))
    before = history_messages(parent.messages)
    path = (
        match_view(before, response=parent.response)[0]
        if parent.response
        else match_view(before)[0]
    )
    got = align_history(path, msgs, items)
    if got is None:
        edits.append(
            Edit(
                UNEXPLAINED,
                0,
                "the call's history does not continue the parent's request and reply",
            )
        )
        return [e.as_dict() for e in edits]
    edits += got.edits
    for n, (a, b) in enumerate(zip(path, msgs, strict=False)):
        if a is b or a == b:
            continue
        if items(a) != items(b):
            break
        if _has_tool_items(a, items):
            edits.append(
                Edit(
                    "openclaw_rerendered_tool_call",
                    n,
                    f"message #{n + 1}: the parent's tool call re-sent re-rendered "
                    "(another id or argument layout)",
                )
            )
    return [e.as_dict() for e in edits]
