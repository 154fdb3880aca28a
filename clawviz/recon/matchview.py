"""What of a request the tree matches on: its messages minus what a harness sends only once.

Strict prefix matching (PIPELINE §2) assumes a request is its history plus new turns. Real
OpenClaw 2026.9 requests are not (recording `tests/data/recorded/openclaw-2026.9.6/`): each
request ends with a context block built for that request alone, OpenClaw's own turn prompts
(its retry prompt, a sub-agent's completion notice) are sent once and never kept, the replies
that followed them are then merged into the previous assistant message, and some prompts are
kept in another form than they were sent. `match_view` turns a request's messages into the
messages the harness keeps, rule by rule, and says per call what it left out and why
(`Ignored`, shown by the call inspector). Matching stays keyed on canonical messages
(`canonical.match_key`) of that view.

The rules are data (`DROP_RULES`, `RENDER_RULES`), one reason code each, and each code is an
entry of the one list of edit rules (`recon.edits.EDIT_RULES`, with its recording);
docs/DECISIONS.md names the recording and test that back each one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from clawviz.recon.canonical import block_text
from clawviz.types import Message

_DATE = r"^\s*(?:\[[^\]\n]*\d[^\]\n]*\]\s*)?"


@dataclass(frozen=True)
class Ignored:
    """One part of a request that matching left out (or read in its kept form)."""

    code: str
    index: int
    """Position of the message in the request (0-based; the system prompt is not counted)."""
    excerpt: str
    why: str

    def as_dict(self) -> dict:
        return {"code": self.code, "index": self.index, "excerpt": self.excerpt, "why": self.why}


@dataclass(frozen=True)
class DropRule:
    """A user message the harness sends for one request only and never keeps."""

    code: str
    pattern: re.Pattern[str]
    why: str


DROP_RULES: tuple[DropRule, ...] = (
    DropRule(
        "openclaw_request_context",
        re.compile(
            r"^\s*<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>.*<<<END_OPENCLAW_INTERNAL_CONTEXT>>>\s*$",
            re.DOTALL,
        ),
        "OpenClaw builds this context block for each request (active exec sessions, "
        "sub-agents, routing notes) and never keeps it in the history",
    ),
    DropRule(
        "openclaw_unkept_prompt",
        re.compile(
            _DATE + r"(?:Continue the current task from the existing transcript"
            # 2026.8's wording of the retry prompt (openclaw-2026.8.2/compaction-after-failure).
            r"|Continue from the current transcript after the latest tool result\."
            r"|A background task completed\. Use this result to reply)",
        ),
        "OpenClaw's own turn prompt (its retry after a failed call, a sub-agent's completion "
        "notice) is sent for one model call and not kept; the reply joins the previous "
        "assistant message",
    ),
)


@dataclass(frozen=True)
class RenderRule:
    """A user message the harness keeps in another form: matched by that kept form."""

    code: str
    render: Callable[[str], str | None]
    """The kept form of a user text, or None when the rule does not apply to it."""
    why: str


_INTER_SESSION = re.compile(
    r"^\s*\[Inter-session message\][^\n]*\n(?:This content was routed by OpenClaw[^\n]*\n)?"
)
_LEADING_DATE = re.compile(r"^\s*\[[^\]\n]*\d[^\]\n]*\]\s*")
_SETTLED = re.compile(
    r"^\s*\[Subagent Context\] Every subagent spawned from this session has now settled"
)
_HEARTBEAT = re.compile(
    _DATE + r"(?:Follow the heartbeat monitor scratch context when provided\."
    r"|\[OpenClaw heartbeat poll\]\s*$)"
)
_POLL_JOINED = re.compile(r"^(\s*\[[^\]\n]*\d[^\]\n]*\]\s*)?\[OpenClaw heartbeat poll\]\s*(?=\S)")
_RUNTIME_LINE = re.compile(r"\n*^Runtime: agent=[^\n]*\|[^\n]*$", re.MULTILINE)


def _runtime_line_removed(text: str) -> str | None:
    return _RUNTIME_LINE.sub("", text) if "Runtime: agent=" in text else None


_QUEUED = re.compile(
    r"^(\s*\[[^\]\n]*\d[^\]\n]*\]\s*)?\[Queued user message from a previous active turn; "
    r"preserved as context only\. Continue with the active prompt below\.\]\s*"
)


_JOINED_CONTINUE = re.compile(
    r"\s*\n\s*Continue the current task from the existing transcript, preserving completed "
    r"work\.[^\n]*\s*$"
)


def _joined_continue_removed(text: str) -> str | None:
    # The pattern starts with whitespace runs: the literal check spares scanning every text.
    if "Continue the current task from the existing transcript" not in text:
        return None
    return _JOINED_CONTINUE.sub("", text) if _JOINED_CONTINUE.search(text) else None


def _queued_kept_form(text: str) -> str | None:
    m = _QUEUED.search(text)
    return (m.group(1) or "") + text[m.end() :] if m else None


def _settled_kept_form(text: str) -> str | None:
    body = _LEADING_DATE.sub("", _INTER_SESSION.sub("", text, count=1), count=1)
    return body if _SETTLED.search(body) else None


def _heartbeat_kept_form(text: str) -> str | None:
    return "[OpenClaw heartbeat poll]" if _HEARTBEAT.search(text) else None


# 2026.8 sends its heartbeat prompt as the poll line, then the event and the monitor prompt;
# the history keeps the poll line alone (openclaw-2026.8.2/heartbeat-after-compaction, hb).
_POLL_PROMPT = re.compile(
    _DATE + r"\[OpenClaw heartbeat poll\]\s*\n.*?Follow the heartbeat monitor scratch context "
    r"when provided\.",
    re.DOTALL,
)


def _poll_prompt_kept_form(text: str) -> str | None:
    return "[OpenClaw heartbeat poll]" if _POLL_PROMPT.search(text) else None


def _joined_poll_removed(text: str) -> str | None:
    m = _POLL_JOINED.search(text)
    return (m.group(1) or "") + text[m.end() :] if m else None


RENDER_RULES: tuple[RenderRule, ...] = (
    RenderRule(
        "openclaw_runtime_line",
        _runtime_line_removed,
        "OpenClaw appends a `Runtime: agent=... | session=...` line to a user message of each "
        "request; a memory flush's private copy names another session in it",
    ),
    RenderRule(
        "openclaw_rerendered_prompt",
        _settled_kept_form,
        "OpenClaw keeps its sub-agents-settled prompt without the date, under an "
        "inter-session header: both forms are read without them",
    ),
    RenderRule(
        "openclaw_rerendered_prompt",
        _heartbeat_kept_form,
        "OpenClaw keeps its heartbeat prompt as the line `[OpenClaw heartbeat poll]`",
    ),
    RenderRule(
        "openclaw_unkept_prompt",
        _joined_continue_removed,
        "OpenClaw's retry prompt joined to the end of the turn's own prompt (after a rate "
        "limit) is sent once and not kept",
    ),
    RenderRule(
        "openclaw_queued_prompt",
        _queued_kept_form,
        "after a rate limit OpenClaw re-sends the turn's prompt wrapped as a queued user "
        "message; it keeps the prompt without that wrapper",
    ),
    RenderRule(
        "openclaw_rerendered_prompt",
        _poll_prompt_kept_form,
        "OpenClaw 2026.8 sends its heartbeat prompt as the poll line followed by the event and "
        "the monitor prompt (after a compaction wrapped as a queued user message); it keeps the "
        "poll line alone",
    ),
    RenderRule(
        "openclaw_hidden_heartbeat",
        _joined_poll_removed,
        "a heartbeat answered NO_REPLY is hidden from the main history, but a memory flush's "
        "private copy keeps its poll line joined to the next user message",
    ),
)

PLACEHOLDER_CODE = "openclaw_joined_placeholder"
PLACEHOLDER_WHY = (
    "OpenClaw 2026.8 re-sends a reply that followed a failed turn with the failed turn's "
    "placeholder line before it; the reply is read without it"
)
_JOINED_PLACEHOLDER = re.compile(r"^\s*\[assistant turn failed before producing content\]\s*\n")

SPLIT_CODE = "openclaw_joined_flush_prompt"
SPLIT_WHY = (
    "OpenClaw 2026.8 re-sends its memory flush's prompt `Continue the OpenClaw runtime event.` "
    "joined to the prompt that came after it (a sub-agent announce, the heartbeat poll line); "
    "the request that sent them had two messages: it is read as those two"
)
_JOINED_FLUSH_PROMPT = re.compile(_DATE + r"Continue the OpenClaw runtime event\.(?=\s*\S)")

MERGE_CODE = "merged_assistant"
MERGE_WHY = (
    "consecutive assistant messages are read as one: the harness joins replies whose prompt "
    "it did not keep"
)

RULE_CODES: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *(r.code for r in DROP_RULES),
            *(r.code for r in RENDER_RULES),
            PLACEHOLDER_CODE,
            SPLIT_CODE,
            MERGE_CODE,
        ]
    )
)


Decision = tuple[str, tuple[tuple[str, str], ...], tuple[Message, ...]]
"""("keep" | "drop" | "render" | "split", the (code, why) of the rules that applied, the kept
form: one message, or two for a split, none for keep and drop)."""


@dataclass
class ViewMemo:
    """Per-episode memo of the per-message decisions (calls re-send the same message objects)."""

    user: dict[int, Decision] = field(default_factory=dict)
    """id(message) -> `_decide(message)`."""
    merged: dict[tuple[int, ...], Message] = field(default_factory=dict)


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text[:80] + ("..." if len(text) > 80 else "")


def _placeholder_removed(message: Message) -> Message | None:
    """An assistant message whose text opens with OpenClaw's failed-turn placeholder line and
    goes on (the reply the retry produced): the message without that line."""
    content = message.get("content")
    if isinstance(content, str):
        m = _JOINED_PLACEHOLDER.match(content)
        rest = content[m.end() :] if m else ""
        return {**message, "content": rest} if rest.strip() else None
    if not isinstance(content, list) or not content:
        return None
    first = content[0]
    if not isinstance(first, dict) or first.get("type") != "text":
        return None
    text = str(first.get("text", ""))
    m = _JOINED_PLACEHOLDER.match(text)
    if m is None:
        return None
    rest = text[m.end() :]
    blocks = ([{**first, "text": rest}] if rest.strip() else []) + list(content[1:])
    return {**message, "content": blocks} if blocks else None


def _decide(message: Message) -> Decision:
    """How the harness keeps `message` (`Decision`)."""
    if message.get("role") == "assistant":
        kept_reply = _placeholder_removed(message)
        if kept_reply is None:
            return "keep", (), ()
        return "render", ((PLACEHOLDER_CODE, PLACEHOLDER_WHY),), (kept_reply,)
    if message.get("role") != "user":
        return "keep", (), ()
    content = message.get("content")
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") not in ("text", None):
                return "keep", (), ()  # tool results and images are history
    text = block_text(content)
    for drop in DROP_RULES:
        if drop.pattern.search(text):
            return "drop", ((drop.code, drop.why),), ()
    split = _JOINED_FLUSH_PROMPT.match(text)
    if split is not None:
        rest, applied = _rendered(text[split.end() :].strip())
        parts = (_user(split.group(0).strip()), _user(rest))
        return "split", ((SPLIT_CODE, SPLIT_WHY), *applied), parts
    text, applied = _rendered(text)
    if not applied:
        return "keep", (), ()
    return "render", tuple(applied), (_user(text),)


def _user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _rendered(text: str) -> tuple[str, list[tuple[str, str]]]:
    """A user text in its kept form by the render rules, and the (code, why) that applied."""
    applied: list[tuple[str, str]] = []
    for rule in RENDER_RULES:
        kept = rule.render(text)
        if kept is None or kept == text:
            continue
        applied.append((rule.code, rule.why))
        text = kept
    return text, applied


def _merge(a: Message, b: Message, memo: ViewMemo) -> Message:
    key = (id(a), id(b))
    m = memo.merged.get(key)
    if m is None:
        blocks: list = []
        for msg in (a, b):
            content = msg.get("content")
            if isinstance(content, str):
                blocks.append({"type": "text", "text": content})
            else:
                blocks.extend(x for x in content or [] if isinstance(x, dict))
        m = memo.merged[key] = {"role": "assistant", "content": blocks}
    return m


def match_view(
    messages: list[Message], memo: ViewMemo | None = None, *, response: Message | None = None
) -> tuple[list[Message], tuple[Ignored, ...]]:
    """The messages matching uses for a request (with `response`: for the call's reply node).

    Returns the very same list object when no rule applies and no response is given, so
    callers keep their identity fast paths; else a new list, and what was left out of the
    request (the response itself is never reported). One walk decides it (`ViewWalker.view`).
    """
    if response is None:
        return ViewWalker(memo).view(messages)
    out, ignored = ViewWalker(memo).view([*messages, response])
    n_req = len(messages)
    return out, tuple(i for i in ignored if i.index < n_req)


class ViewWalker:
    """`match_view` for the requests of one episode in order, resuming from the previous one.

    A request usually re-sends the previous request's messages (the same objects) plus new
    ones; the view of that shared prefix is taken from the previous call instead of being
    rebuilt, so the work per call is its new messages (as for the tree's trie walk).
    """

    def __init__(self, memo: ViewMemo | None = None) -> None:
        self.memo = memo if memo is not None else ViewMemo()
        self.raw: list[Message] = []
        self.out: list[Message] = []
        self.ignored: list[Ignored] = []
        self.snaps: list[tuple[int, Message | None, int, bool, bool]] = [(0, None, 0, False, False)]
        """After each number of raw messages: (len(out), out[-1], len(ignored), changed,
        dropped)."""

    @property
    def ends_after_drop(self) -> bool:
        """Whether the last request's view ends on a message after which one was dropped."""
        return self.snaps[-1][4]

    def _shared(self, messages: list[Message]) -> int:
        prev = self.raw
        n = min(len(prev), len(messages))
        # OpenClaw: the previous request's last message (its context block) is not re-sent.
        for k in (n, n - 1, n - 2):
            if k > 0 and messages[k - 1] is prev[k - 1] and messages[:k] == prev[:k]:
                return k
        k = 0
        while k < n and messages[k] is prev[k]:
            k += 1
        return k

    def view(self, messages: list[Message]) -> tuple[list[Message], tuple[Ignored, ...]]:
        """Same result as `match_view(messages)`."""
        memo = self.memo
        k = self._shared(messages)
        n_out, last, n_ign, changed, dropped = self.snaps[k]
        out = self.out[:n_out]
        if n_out:
            out[-1] = last  # type: ignore[assignment]
        # In place: only this walker reads them (`ignored` leaves as a tuple, `out` as is).
        ignored, snaps = self.ignored, self.snaps
        del ignored[n_ign:], snaps[k + 1 :]
        for i in range(k, len(messages)):
            m = messages[i]
            d = memo.user.get(id(m))
            if d is None:
                d = memo.user[id(m)] = _decide(m)
            kind, rules, kept = d
            if kind != "keep":
                changed = True
                excerpt = _excerpt(block_text(m.get("content")))
                ignored.extend(Ignored(code, i, excerpt, why) for code, why in rules)
                if kind == "drop":
                    dropped = True
                    snaps.append((len(out), out[-1] if out else None, len(ignored), True, True))
                    continue
                if kind == "split":
                    out.append(kept[0])
                m = kept[-1]
            if (
                dropped
                and m.get("role") == "assistant"
                and out
                and out[-1].get("role") == "assistant"
            ):
                changed = True
                out[-1] = _merge(out[-1], m, memo)
                ignored.append(
                    Ignored(MERGE_CODE, i, _excerpt(block_text(m.get("content"))), MERGE_WHY)
                )
            else:
                out.append(m)
            dropped = False
            snaps.append((len(out), out[-1], len(ignored), changed, False))
        self.raw, self.out, self.ignored, self.snaps = messages, out, ignored, snaps
        if not changed:
            return messages, ()
        return out, tuple(ignored)

    def joined_reply(self, response: Message) -> Message:
        """The last request's final assistant message joined with `response` (its reply, when
        the prompt between them was dropped: see `ends_after_drop`)."""
        return _merge(self.out[-1], response, self.memo)
