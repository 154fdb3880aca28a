"""Harness markers (FORMATS §3) as data: one row per harness, so a new release is a one-line edit.

Every pattern is a regular expression searched (not anchored unless it says so) in one part of a
call: the system text, the first user text, the last user text, or a header. `detect_marker`
checks the call's own harness row first, then every other row, because a log's harness label
is often missing; a call no row recognises is classified by structure in `clawviz.recon.classify`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from clawviz.recon.canonical import block_text, strip_patterns, with_prefixes
from clawviz.types import Call, Message


def _rx(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.DOTALL) for p in patterns)


# Harnesses prefix user turns with a timestamp such as `[Thu 2026-07-09 10:00 GMT+8] `.
_DATE = r"^\s*(?:\[[^\]\n]*\d[^\]\n]*\]\s*)?"


@dataclass(frozen=True)
class SpawnTool:
    """A tool call that starts a sub-agent, and where its prompt lives in the arguments."""

    name: str
    prompt_keys: tuple[str, ...]
    wrapper_id: str | None = None
    """For Tool-Search wrappers (`tool_call {id, args}`): the wrapped tool's id."""


@dataclass(frozen=True)
class HarnessMarkers:
    """The markers of one harness family (FORMATS §3)."""

    harness: str
    main_system: tuple[re.Pattern[str], ...] = ()
    utility_user: tuple[re.Pattern[str], ...] = ()
    """Matched on the only user text of a one-message call."""
    utility_last_user: tuple[re.Pattern[str], ...] = ()
    """Matched on the last user text of any call (side requests that extend the main tip)."""
    utility_system: tuple[re.Pattern[str], ...] = ()
    summary_system: tuple[re.Pattern[str], ...] = ()
    summary_last_user: tuple[re.Pattern[str], ...] = ()
    summary_header: tuple[tuple[str, re.Pattern[str]], ...] = ()
    continuation_user: tuple[re.Pattern[str], ...] = ()
    subagent_system: tuple[re.Pattern[str], ...] = ()
    subagent_first_user: tuple[re.Pattern[str], ...] = ()
    heartbeat_last_user: tuple[re.Pattern[str], ...] = ()
    cron_first_user: tuple[re.Pattern[str], ...] = ()
    memory_flush_last_user: tuple[re.Pattern[str], ...] = ()
    memory_flush_system: tuple[re.Pattern[str], ...] = ()
    """Matched on the system text (OpenClaw 2026.8 puts its flush prompt there)."""
    subagent_result_user: tuple[re.Pattern[str], ...] = ()
    retry_last_user: tuple[re.Pattern[str], ...] = ()
    wrapper_user: tuple[re.Pattern[str], ...] = ()
    """User messages a harness appends around a turn (runtime context); markers look past them."""
    context_user: tuple[re.Pattern[str], ...] = ()
    """User messages a harness puts before the user's own first words (environment, AGENTS.md):
    the first-user text (sub-agent spawn prompts, cron markers) looks past them."""
    spawn_tools: tuple[SpawnTool, ...] = ()
    ignore_patterns: tuple[re.Pattern[str], ...] = field(default=())
    """Spans removed before matching (they change between otherwise identical turns)."""


HARNESS_MARKERS: tuple[HarnessMarkers, ...] = (
    HarnessMarkers(
        harness="claude_code",
        main_system=_rx(
            r"You are Claude Code, Anthropic's official CLI",
            r"You are a Claude agent, built on Anthropic's Claude Agent SDK",
        ),
        utility_user=_rx(
            r"^\s*(?:Warmup|quota)\s*$",
            r"Extract any file paths that this command reads",
            r"<policy_spec>",
        ),
        utility_last_user=_rx(r"^\s*\[SUGGESTION MODE"),
        utility_system=_rx(
            # Real 2.0.x path extraction sends its instruction as the system prompt.
            r"Extract any file paths that this command reads",
            r"<policy_spec>",
            r"Generate a concise, sentence-case title",
            r"kebab-case name",
            r"new conversation topic",
            r"isNewTopic",
            r"Summarize this coding conversation in under 50 characters",
            r"write a 5-10 word title",
        ),
        summary_system=_rx(r"You are a helpful AI assistant tasked with summarizing conversations"),
        summary_last_user=_rx(
            r"Your task is to create a detailed summary of the (?:conversation so far|RECENT)",
            # 2.1 appends it to the last kept user prompt when it compacts only the head.
            r"(?:^|\n)\s*CRITICAL: Respond with TEXT ONLY\. Do NOT call any tools\.",
        ),
        continuation_user=_rx(
            r"^\s*This session is being continued from a previous conversation that ran out of "
            r"context"
        ),
        subagent_system=_rx(
            r"You are an agent for Claude Code",
            r"file search specialist for Claude Code",
            r"software architect",
            r"command execution specialist",
        ),
        spawn_tools=(SpawnTool("Task", ("prompt",)), SpawnTool("Agent", ("prompt",))),
        ignore_patterns=_rx(
            # Innermost spans only: `strip_patterns` repeats until none is left, so a reminder
            # that quotes a file holding its own reminder (2.0 re-read attachments) goes whole.
            r"<system-reminder>[^<]*(?:<(?!/?system-reminder>)[^<]*)*</system-reminder>",
            r"x-anthropic-billing-header:[^\n]*",
        ),
    ),
    HarnessMarkers(
        harness="openclaw",
        # 2026.9 puts `<!-- openclaw:attempt:STABLE -->` before it.
        main_system=_rx(
            r"^\s*(?:<!--[^\n]*-->\s*)?You are a personal assistant running inside OpenClaw\."
        ),
        summary_system=_rx(r"^\s*You are a context summarization assistant"),
        summary_last_user=_rx(
            r"^\s*<conversation>.*(?:conversation to summarize|incorporate into the existing "
            r"summary|Produce a compact, factual summary with these exact section headings)",
            r"This is the PREFIX of a turn that was too large to keep\. The SUFFIX \(recent "
            r"work\) is retained\.",
            r"Merge these partial summaries",
        ),
        continuation_user=_rx(
            _DATE + r"The conversation history before this point was compacted into the "
            r"following summary:"
        ),
        subagent_system=_rx(r"(?m)^# Subagent Context\b"),
        subagent_first_user=_rx(
            _DATE + r"\[Subagent Context\] You are running as a subagent \(depth \d+/\d+\)",
            _DATE + r"\[Subagent Context\].*\[Subagent Task\]",
        ),
        heartbeat_last_user=_rx(
            _DATE + r"Read HEARTBEAT\.md if it exists",
            _DATE + r"Follow the heartbeat monitor scratch context when provided\.",
            # How 2026.9 keeps that prompt in its transcript (a replayed heartbeat ends here).
            _DATE + r"\[OpenClaw heartbeat poll\]\s*$",
            # 2026.8: the poll line, the event, then the monitor prompt (after a compaction
            # wrapped as a queued user message; openclaw-2026.8.2/heartbeat-after-compaction).
            r"(?m)^\[OpenClaw heartbeat poll\]\s*\n.*?Follow the heartbeat monitor scratch "
            r"context when provided\.",
        ),
        cron_first_user=_rx(_DATE + r"\[cron:([^\s\]]+) ([^\]]*)\] "),
        memory_flush_last_user=_rx(_DATE + r"Pre-compaction memory flush\."),
        # 2026.8 sends the flush prompt in the system prompt's internal-context block (the
        # last user text is `Continue the OpenClaw runtime event.`; recordings
        # openclaw-2026.8.2/compaction-after-failure and heartbeat-after-compaction).
        memory_flush_system=_rx(r"(?m)^Pre-compaction memory flush\."),
        subagent_result_user=_rx(
            r"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>",
            r"^\s*\[Subagent Context\] Every subagent spawned from this session has now settled",
        ),
        # After the refreshed runtime-context block, in the same user message.
        retry_last_user=_rx(r"Continue the current task from the existing transcript"),
        # 2026.9 ends every request with a `<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>` block.
        wrapper_user=_rx(
            r"^\s*OpenClaw runtime (?:context|event)\b",
            r"^\s*<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>",
        ),
        spawn_tools=(
            SpawnTool("sessions_spawn", ("task", "prompt", "message")),
            SpawnTool("tool_call", ("task", "prompt", "message"), wrapper_id="sessions_spawn"),
        ),
        # The send time OpenClaw puts before a user prompt (`[Tue 2026-12-01 09:31 UTC] `): a
        # prompt it re-sends after a rate limit carries the time of the re-send, the history
        # the first one (recording openclaw-2026.9.6/yield-heartbeat, re-recorded).
        ignore_patterns=(
            re.compile(
                r"(?m)^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?"
                r"(?: [A-Za-z]{2,5}(?:[+-]\d{1,2}(?::?\d{2})?)?)?\] ?"
            ),
        ),
    ),
    HarnessMarkers(
        harness="codex",
        summary_last_user=_rx(
            r"^\s*You are performing a CONTEXT CHECKPOINT COMPACTION\. Create a handoff summary"
        ),
        summary_header=(("x-codex-turn-metadata", re.compile(r"compaction")),),
        continuation_user=_rx(
            r"^\s*Another language model started to solve this problem and produced a summary "
            r"of its thinking process\."
        ),
        context_user=_rx(
            r"^\s*<environment_context>",
            r"^\s*# AGENTS\.md instructions for ",
            r"^\s*<user_instructions>",
        ),
        spawn_tools=(SpawnTool("spawn_agent", ("message", "prompt", "task", "items")),),
    ),
)

HARNESS_ALIASES: dict[str, str] = {
    "pi": "openclaw",
    "openclaw": "openclaw",
    "claude_code": "claude_code",
    "claude-code": "claude_code",
    "claudecode": "claude_code",
    "codex": "codex",
}

_BY_HARNESS = {m.harness: m for m in HARNESS_MARKERS}

ALL_IGNORE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    p for m in HARNESS_MARKERS for p in m.ignore_patterns
)
"""Ignore patterns of every harness: they never match real content of another harness."""

_SUMMARY_HEADERS: tuple[str, ...] = tuple(
    dict.fromkeys(name for m in HARNESS_MARKERS for name, _ in m.summary_header)
)
_RETRY_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    p for m in HARNESS_MARKERS for p in m.retry_last_user
)
_CONTEXT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    p for m in HARNESS_MARKERS for p in m.context_user
)
_SPAWN_NAMES = frozenset(t.name for m in HARNESS_MARKERS for t in m.spawn_tools)

# Role codes of marker kinds, in the order PIPELINE §3 checks them.
MARKER_ORDER: tuple[str, ...] = (
    "aux_utility",
    "aux_summary",
    "continuation",
    "aux_subagent",
    "aux_heartbeat",
    "aux_cron",
    "aux_memory_flush",
)


@dataclass(frozen=True)
class Marker:
    """A marker hit: the kind (role code or `continuation`), harness row and what matched."""

    kind: str
    harness: str
    evidence: str


@dataclass(frozen=True)
class CallText:
    """The texts of a call that markers look at."""

    system: str
    first_user: str
    last_user: str
    """Last user text, looking past harness wrapper messages (runtime context)."""
    last_user_raw: str
    """Last user text as sent (where OpenClaw puts its retry prompt)."""
    user_texts: tuple[str, ...]
    """Texts of the first few user messages (continuation markers sit in one of them)."""
    headers: dict[str, str]


_SCAN = 12
"""Messages scanned at each end: markers sit in the first or the last few messages."""


def _user_text(message: Message) -> str:
    if message.get("role") not in ("user", "tool"):
        return ""
    # Claude Code puts <system-reminder> blocks before the text a marker starts.
    return strip_patterns(block_text(message.get("content")), ALL_IGNORE_PATTERNS)


@dataclass
class TextCache:
    """Per-episode memo of marker texts (calls re-send the same message objects)."""

    user: dict[int, str] = field(default_factory=dict)
    """Non-blank user text of a message object, by id ('' when blank or not a user message)."""
    heads: dict[tuple[int, ...], tuple[tuple[str, ...], str]] = field(default_factory=dict)
    """Non-blank user texts of the first messages and the first of them that is not a context
    block (`CallText.first_user`), by the ids of those messages."""
    wrapper: dict[str, bool] = field(default_factory=dict)
    markers: dict[tuple, Marker | None] = field(default_factory=dict)
    """`detect_marker` results by everything they depend on."""
    hits: dict[tuple[int, str], str | None] = field(default_factory=dict)
    """Marker pattern hits on the system prompt and first user texts (`Hits`): a new
    combination of a call's texts mostly differs in its last user text only."""


def _texts(window: list[Message], memo: dict[int, str]) -> list[str]:
    out = []
    for m in window:
        t = memo.get(id(m))
        if t is None:
            t = _user_text(m)
            t = memo[id(m)] = t if t.strip() else ""
        out.append(t)
    return out


def call_text(call: Call, cache: TextCache | None = None) -> CallText:
    """Extract the marker-relevant texts (user messages holding only tool results are skipped).

    Scans only the first few and the last user messages: the history between them is long.
    `cache` memoises texts per message object across the calls of one episode.
    """
    c = TextCache() if cache is None else cache
    head = call.messages[:_SCAN]
    head_key = tuple(map(id, head))
    got = c.heads.get(head_key)
    if got is None:
        first = tuple([t for t in _texts(head, c.user) if t][:3])
        own = [t for t in first if _first_hit(_CONTEXT_PATTERNS, t) is None]
        got = c.heads[head_key] = (first, own[0] if own else (first[0] if first else ""))
    first, first_user = got
    last = raw = ""
    memo = c.user
    msgs = call.messages
    # From the end, each text read only until the last own user text is found.
    for m in reversed(msgs[-_SCAN:] if len(msgs) > _SCAN else msgs):
        text = memo.get(id(m))
        if text is None:
            text = _user_text(m)
            text = memo[id(m)] = text if text.strip() else ""
        if not text:
            continue
        raw = raw or text
        wrapper = c.wrapper.get(text)
        if wrapper is None:
            wrapper = c.wrapper[text] = _is_wrapper(text)
        if not wrapper:
            last = text
            break
    headers = {k.lower(): str(v) for k, v in (call.headers or {}).items()} if call.headers else {}
    return CallText(
        system=call.system or "",
        first_user=first_user,
        last_user=last or raw,
        last_user_raw=raw,
        user_texts=first,
        headers=headers,
    )


def _is_wrapper(text: str) -> bool:
    return any(_first_hit(row.wrapper_user, text) for row in HARNESS_MARKERS)


def _first_hit(patterns: Iterable[re.Pattern[str]], text: str) -> str | None:
    for p, prefix in with_prefixes(patterns):
        if prefix and prefix not in text:
            continue  # every match starts with it: the regex cannot match
        m = p.search(text)
        if m:
            return m.group(0)[:80]
    return None


@lru_cache(maxsize=1024)
def _system_hit(patterns: tuple[re.Pattern[str], ...], system: str) -> str | None:
    # Every call of a thread repeats the same (long) system prompt: search it once.
    return _first_hit(patterns, system)


def rows_for(harness: str | None) -> list[HarnessMarkers]:
    """The call's own harness row first, then the others."""
    own = _BY_HARNESS.get(HARNESS_ALIASES.get((harness or "").lower(), ""))
    return ([own] if own else []) + [m for m in HARNESS_MARKERS if m is not own]


Hits = dict[tuple[int, str], str | None]
"""`_first_hit` results by (id of the patterns tuple, text): the tuples are fields of
`HARNESS_MARKERS`, alive as long as the module. Only for the system prompt and the first user
texts, which a thread repeats; a call's last user text is mostly new when its texts are (and
memoising it would hold one entry per turn and pattern row)."""


def _hit(
    patterns: tuple[re.Pattern[str], ...],
    text: str,
    memo: Hits | None,
    search: Callable[[tuple[re.Pattern[str], ...], str], str | None] = _first_hit,
) -> str | None:
    """`search(patterns, text)` through the episode's memo (`_system_hit` for a system prompt:
    it also caches across episodes when there is no memo)."""
    if memo is None:
        return search(patterns, text)
    key = (id(patterns), text)
    if key in memo:
        return memo[key]
    hit = memo[key] = search(patterns, text)
    return hit


def _match_kind(
    kind: str, m: HarnessMarkers, t: CallText, single_user: bool, memo: Hits | None = None
) -> str | None:
    if kind == "aux_utility":
        hit = _hit(m.utility_system, t.system, memo, _system_hit)
        if hit is None and single_user:
            hit = _first_hit(m.utility_user, t.last_user)
        return hit or _first_hit(m.utility_last_user, t.last_user)
    if kind == "aux_summary":
        hit = _hit(m.summary_system, t.system, memo, _system_hit) or _first_hit(
            m.summary_last_user, t.last_user
        )
        for name, pat in m.summary_header:
            if hit is None and pat.search(t.headers.get(name, "")):
                hit = f"{name}: {t.headers[name][:60]}"
        return hit
    if kind == "continuation":
        for text in t.user_texts:
            hit = _hit(m.continuation_user, text, memo)
            if hit:
                return hit
        return None
    if kind == "aux_subagent":
        return _hit(m.subagent_system, t.system, memo, _system_hit) or _hit(
            m.subagent_first_user, t.first_user, memo
        )
    if kind == "aux_heartbeat":
        return _first_hit(m.heartbeat_last_user, t.last_user)
    if kind == "aux_cron":
        return _hit(m.cron_first_user, t.first_user, memo)
    if kind == "aux_memory_flush":
        return _first_hit(m.memory_flush_last_user, t.last_user) or _hit(
            m.memory_flush_system, t.system, memo, _system_hit
        )
    return None


_UNSEEN = object()


def detect_marker(
    call: Call,
    text: CallText | None = None,
    *,
    continuation: bool = True,
    cache: TextCache | None = None,
) -> Marker | None:
    """The first marker kind (PIPELINE §3 order) any harness row finds in this call.

    `continuation=False` skips the compaction-continuation kind: it only starts a segment at a
    root, and every later call of that segment still carries it in its first messages.
    """
    t = text or call_text(call)
    n_user = 0
    for msg in call.messages:
        if msg.get("role") in ("user", "tool"):
            n_user += 1
            if n_user > 1:
                break
    if cache is None:
        return _detect(call.harness, t, n_user <= 1, continuation)
    # The calls of a thread mostly share their texts: look each combination up once.
    key = (
        call.harness,
        n_user <= 1,
        continuation,
        t.system,
        t.first_user,
        t.last_user,
        t.user_texts,
        tuple(map(t.headers.get, _SUMMARY_HEADERS)),
    )
    found = cache.markers.get(key, _UNSEEN)
    if found is _UNSEEN:
        found = cache.markers[key] = _detect(call.harness, t, n_user <= 1, continuation, cache.hits)
    return found  # type: ignore[return-value]


def _detect(
    harness: str | None,
    t: CallText,
    single_user: bool,
    continuation: bool,
    memo: Hits | None = None,
) -> Marker | None:
    rows = rows_for(harness)
    for kind in MARKER_ORDER:
        if kind == "continuation" and not continuation:
            continue
        for m in rows:
            hit = _match_kind(kind, m, t, single_user, memo)
            if hit:
                if kind == "continuation":
                    side = _maintenance_after_compaction(rows, t, single_user, memo)
                    if side is not None:
                        return side
                return Marker(kind=kind, harness=m.harness, evidence=hit)
    return None


MAINTENANCE_KINDS = ("aux_heartbeat", "aux_memory_flush")
AFTER_COMPACTION = "after compaction: "
"""How the evidence of a maintenance marker on a compacted history starts."""
"""Side turns a harness may run directly after a compaction, on the compacted history."""


def _maintenance_after_compaction(
    rows: list[HarnessMarkers], t: CallText, single_user: bool, memo: Hits | None
) -> Marker | None:
    """A heartbeat or memory flush sent right after a compaction: its first message is the
    compacted history (a continuation marker), its last user text the side turn's own prompt.
    It is that side turn, not the continuation (issue 29: taken for the main path, its first
    call became a segment's kept tip). The last user text must not be the continuation message
    itself (a summary may quote an earlier heartbeat prompt)."""
    if any(_first_hit(m.continuation_user, t.last_user) for m in rows):
        return None
    for kind in MAINTENANCE_KINDS:
        for m in rows:
            hit = _match_kind(kind, m, t, single_user, memo)
            if hit:
                return Marker(kind=kind, harness=m.harness, evidence=AFTER_COMPACTION + hit)
    return None


@lru_cache(maxsize=256)
def is_memory_flush_system(system: str) -> bool:
    """Whether a system prompt carries a harness's memory-flush marker (OpenClaw 2026.8 sends
    the flush prompt there; its flush runs on a private copy of the history)."""
    return bool(system) and any(_first_hit(m.memory_flush_system, system) for m in HARNESS_MARKERS)


def is_harness_retry(call: Call, text: CallText | None = None) -> bool:
    """True when the last user text is a harness's own retry prompt (OpenClaw `Continue ...`)."""
    t = text or call_text(call)
    # Row order does not matter for `any`.
    # 2026.9 sends the prompt as its own message before the request-context block (the last
    # user text past wrappers); older releases put it inside the runtime-context message.
    return any(
        text != "" and _first_hit(_RETRY_PATTERNS, text) is not None
        for text in (t.last_user, t.last_user_raw)
    )


def spawn_prompts(message: Message | None) -> list[str]:
    """Prompts of the sub-agent spawn tool calls in an assistant message, in order."""
    if not message:
        return []
    out: list[str] = []
    for b in message.get("content") or []:
        if not isinstance(b, dict) or b.get("type") != "tool_use":
            continue
        if b.get("name") not in _SPAWN_NAMES:
            continue
        prompt = _spawn_prompt(b.get("name"), b.get("input"))
        if prompt:
            out.append(prompt)
    return out


def _spawn_prompt(name: Any, args: Any) -> str | None:
    for m in HARNESS_MARKERS:
        for tool in m.spawn_tools:
            if tool.name != name or not isinstance(args, dict):
                continue
            if tool.wrapper_id is not None:
                if args.get("id") != tool.wrapper_id:
                    continue
                args = args.get("args") or args.get("arguments") or {}
                if not isinstance(args, dict):
                    continue
            for key in tool.prompt_keys:
                value = args.get(key)
                if isinstance(value, str) and value.strip():
                    return value
                if isinstance(value, list):
                    text = block_text(value)
                    if text.strip():
                        return text
    return None


def tool_names_used(message: Message | None) -> list[str]:
    """Names of the tools an assistant message calls (a Tool-Search wrapper counts as its id)."""
    if not message:
        return []
    names: list[str] = []
    for b in message.get("content") or []:
        if isinstance(b, dict) and b.get("type") == "tool_use":
            name = str(b.get("name"))
            args = b.get("input")
            if name == "tool_call" and isinstance(args, dict) and isinstance(args.get("id"), str):
                names.append(args["id"])
            names.append(name)
    return names
