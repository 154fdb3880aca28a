"""Roles, links, segments and threads of the calls of one episode (PIPELINE §3).

Every call is checked against the harness markers, not only roots: summary requests,
heartbeats and memory flushes re-send the whole main history, so they extend the main tip and a
prefix match alone would call them main. A call with no marker of its own inherits the role of
the nearest ancestor that is not such a tip extension.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from clawviz.recon.canonical import block_text, match_key, normalize_ws, with_prefixes
from clawviz.recon.markers import (
    AFTER_COMPACTION,
    ALL_IGNORE_PATTERNS,
    CallText,
    Marker,
    TextCache,
    call_text,
    detect_marker,
    spawn_prompts,
)
from clawviz.recon.tree import CallTree
from clawviz.types import HIDDEN_MAINTENANCE, Call
from clawviz.types import call_label as _label

AUX_ROLES = (
    "aux_utility",
    "aux_summary",
    "aux_subagent",
    "aux_heartbeat",
    "aux_cron",
    "aux_memory_flush",
    "aux_non_model",
)
TIP_EXTENSIONS = frozenset({"aux_summary", "aux_heartbeat", "aux_memory_flush"})
"""Roles of calls that re-send the main history plus one instruction; never inherited."""
_MAIN_OR_TIP = frozenset({"main", *TIP_EXTENSIONS})
"""`main` or a tip extension (a set, not a starred tuple: mypyc cannot compile that)."""

_TURN_TYPE_ROLES = (
    ("heartbeat", "aux_heartbeat"),
    ("cron", "aux_cron"),
    ("memory", "aux_memory_flush"),
    ("flush", "aux_memory_flush"),
    ("summar", "aux_summary"),
    ("compact", "aux_summary"),
    ("sub", "aux_subagent"),
)


@dataclass
class CallRole:
    """The role of one call and why, with its link, segment and thread."""

    role: str
    reason: str
    linked_call: str | None = None
    segment: int | None = None
    thread: str = ""
    continuation: bool = False
    """First call of a segment after compaction."""


@dataclass
class Classification:
    """Roles of all calls of an episode, plus the episode's segment count."""

    roles: dict[str, CallRole]
    n_segments: int
    main_root: str | None
    texts: dict[str, CallText] = field(default_factory=dict)
    """Marker texts of every call (reused by pruning)."""
    own_spawn: set[str] = field(default_factory=set)
    """Sub-agent roots that took a spawn call of their own: never re-sends of an earlier root."""

    def resend_of(self, tree: CallTree, call_id: str) -> str | None:
        """The earlier identical request this call retries (parallel sub-agents excepted).

        A side request that repeats an answered one is asked again, not retried: Claude Code
        sends the same `Warmup` per sub-agent type at the start of every `claude -p` run, and
        the same path-extraction request after the same command (rule `aux_repeat_not_retry`).
        """
        earlier = None if call_id in self.own_spawn else tree.resend_of.get(call_id)
        if earlier is None or self.roles[call_id].role == "main":
            return earlier
        if earlier in tree.failed or tree.by_id[earlier].delivered is False:
            return earlier
        return None

    def main_parent(self, tree: CallTree, call_id: str) -> str | None:
        """Nearest ancestor that is a main call (skipping tip extensions in the history)."""
        p = tree.parent[call_id]
        while p is not None and self.roles[p].role != "main":
            if self.roles[p].role not in TIP_EXTENSIONS:
                return None
            p = tree.parent[p]
        return p


def _ground_truth(call: Call, marker: Marker | None) -> tuple[str, str] | None:
    tt = (call.turn_type or "").strip().lower()
    if not tt:
        return None
    if tt in ("main", "agent", "turn"):
        return "main", f"ground truth turn type {call.turn_type!r}"
    if tt in AUX_ROLES:
        return tt, f"ground truth role {call.turn_type!r}"
    if marker is not None and marker.kind in AUX_ROLES:
        return marker.kind, f"ground truth side turn {call.turn_type!r}; {marker.evidence!r}"
    for needle, role in _TURN_TYPE_ROLES:
        if needle in tt:
            return role, f"ground truth turn type {call.turn_type!r}"
    return "aux_utility", f"ground truth side turn {call.turn_type!r}"


@lru_cache(maxsize=256)
def _identity(system: str) -> str:
    """The system prompt's identity line: its first 200 characters without volatile spans."""
    for p, prefix in with_prefixes(ALL_IGNORE_PATTERNS):
        if not prefix or prefix in system:  # else the pattern cannot match
            system = p.sub("", system)
    # The collapsed form of a prefix is a prefix of the whole text's: only as much of a long
    # prompt as gives 200 characters is split (not the whole prompt, once per episode).
    n = 1024
    while n < len(system):
        head = normalize_ws(system[:n])
        if len(head) > 200:
            return head[:200]
        n *= 4
    return normalize_ws(system)[:200]


def _summary_body(call: Call) -> str:
    text = block_text((call.response or {}).get("content"))
    m = re.search(r"<summary>(.*?)(?:</summary>|$)", text, re.DOTALL)
    return normalize_ws(m.group(1) if m else text)


def _snippets(body: str) -> list[str]:
    """Pieces of a summary to look for in a continuation (harnesses re-format the text)."""
    out = [body[:200]] if len(body) >= 20 else ([body] if body else [])
    for line in re.split(r"(?<=[.:!?])\s", body):
        if len(line) >= 40:
            out.append(line[:120])
        if len(out) >= 4:
            break
    return out


class _SpawnIndex:
    """Sub-agent spawn prompts seen so far, each linkable to one sub-agent root."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str]] = []
        self.used: set[int] = set()
        self.fresh = False
        """Whether the last match took a spawn call no earlier root had taken."""

    def add(self, call: Call) -> None:
        for prompt in spawn_prompts(call.response):
            self.entries.append((call.call_id, normalize_ws(prompt)))

    def match(self, first_user: str) -> str | None:
        text = normalize_ws(first_user)
        if not text:
            return None
        hits = [i for i, (_, p) in enumerate(self.entries) if p and (p == text or p in text)]
        if not hits:
            return None
        # Parallel sub-agents with identical prompts: each takes its own spawn call in order.
        free = [i for i in hits if i not in self.used]
        pick = free[0] if free else hits[-1]
        self.fresh = bool(free)
        self.used.add(pick)
        return self.entries[pick][0]


@dataclass
class _Walk:
    """What classifying the calls so far has learnt (spawns, summaries, the last main call)."""

    spawns: _SpawnIndex = field(default_factory=lambda: _SpawnIndex())
    summaries: list[str] = field(default_factory=list)
    summary_snippets: dict[str, list[str]] = field(default_factory=dict)
    last_main_ok: str | None = None
    own_spawn: set[str] = field(default_factory=set)


def classify_calls(tree: CallTree) -> Classification:
    """Assign every call a role (first PIPELINE §3 rule that matches), link, segment, thread."""
    roles: dict[str, CallRole] = {}
    walk = _Walk()
    main_root: str | None = None
    texts: dict[str, CallText] = {}
    text_cache = TextCache()
    main_identity, main_tools = _main_fingerprint(tree, texts, text_cache)

    for call in tree.calls:
        cid = call.call_id
        parent = tree.parent[cid]
        text = texts.get(cid)
        if text is None:
            text = texts[cid] = call_text(call, text_cache)
        if call.endpoint == "non_model":
            roles[cid] = CallRole("aux_non_model", f"non-model endpoint {call.method} {call.url}")
            continue
        # Past a segment's root the continuation text is history: look for the side-request
        # markers (heartbeat, memory flush, summary) behind it.
        marker = detect_marker(call, text, continuation=parent is None, cache=text_cache)
        gt = _ground_truth(call, marker)
        cr = _rule_role(tree, call, text, marker, gt, roles, walk.spawns, main_identity, main_tools)
        cr = _link_role(tree, call, text, cr, gt, roles, walk)
        if _side_turn_after_compaction(marker, parent, cr):
            # A heartbeat or memory flush that is the first request on a compacted history
            # (rule `maintenance_after_compaction`): linked to the summary it continues.
            cr.linked_call = _find_summary(tree, call, walk.summaries, walk.summary_snippets)
        if cr.role == "main" and main_root is None and parent is None:
            main_root = cid
            if main_identity is None:
                main_identity, main_tools = _identity(call.system), bool(call.tools)
        if cr.role == "main" and cid not in tree.failed:
            walk.last_main_ok = cid
        if cr.role in ("main", "aux_subagent") and cid not in tree.failed:
            walk.spawns.add(call)
        roles[cid] = cr

    n_segments = _assign_segments(tree, roles)
    _assign_threads(tree, roles)
    return Classification(
        roles=roles,
        n_segments=n_segments,
        main_root=main_root,
        texts=texts,
        own_spawn=walk.own_spawn,
    )


_HIDDEN_REASON = "hidden maintenance turn: "


def _hidden_maintenance(call: Call) -> str | None:
    """The role reason of a call the harness's own record marks as a hidden maintenance turn
    (rule `hidden_maintenance_turn`), else None.

    A transcript reader sets `Call.extra[HIDDEN_MAINTENANCE]` with its evidence: OpenClaw 2026.8
    keeps its memory flush in the main session's transcript as a turn whose prompt and reply
    are both `display: false`, which it writes for a memory-triggered run only; the replay has
    no system prompt, where the wire says it is the flush (FORMATS §3 `memory_flush_system`).
    """
    evidence = call.extra.get(HIDDEN_MAINTENANCE) if call.extra else None
    if not evidence:
        return None
    return f"{_HIDDEN_REASON}{evidence}"


def _side_turn_after_compaction(marker: Marker | None, parent: str | None, cr: CallRole) -> bool:
    """A side turn that is the first request on a compacted history: a maintenance marker
    behind the continuation (`maintenance_after_compaction`) or a hidden maintenance turn."""
    if marker is None or parent is not None:
        return False
    if marker.evidence.startswith(AFTER_COMPACTION):
        return True
    return marker.kind == "continuation" and cr.reason.startswith(_HIDDEN_REASON)


def _rule_role(
    tree: CallTree,
    call: Call,
    text: CallText,
    marker: Marker | None,
    gt: tuple[str, str] | None,
    roles: dict[str, CallRole],
    spawns: _SpawnIndex,
    main_identity: str | None,
    main_tools: bool,
) -> CallRole:
    """The first PIPELINE §3 rule that places the call: ground truth, a marker, the call it
    continues, else the root rules."""
    parent = tree.parent[call.call_id]
    if gt is not None:
        cr = CallRole(gt[0], gt[1])
        if gt[0] == "main" and marker is not None and marker.kind == "continuation":
            cr.continuation = parent is None
        return cr
    if marker is not None and marker.kind != "continuation":
        return CallRole(marker.kind, f"{marker.harness} marker {marker.evidence!r}")
    hidden = _hidden_maintenance(call)
    if hidden is not None:
        return CallRole("aux_memory_flush", hidden)
    if marker is not None and parent is None:
        return CallRole("main", f"after compaction: {marker.evidence!r}", continuation=True)
    if parent is not None:
        anc: str | None = parent
        while anc is not None and roles[anc].role in TIP_EXTENSIONS:
            anc = tree.parent[anc]
        role = roles[anc].role if anc is not None else "main"
        return CallRole(role, f"continues call {_label(tree.by_id[parent])}")
    return _classify_root(tree, call, text.first_user, spawns, roles, main_identity, main_tools)


def _link_role(
    tree: CallTree,
    call: Call,
    text: CallText,
    cr: CallRole,
    gt: tuple[str, str] | None,
    roles: dict[str, CallRole],
    walk: _Walk,
) -> CallRole:
    """Link a sub-agent root to its spawn, a summary to the tip it summarises, a continuation
    to its summary (a compacted sub-agent or cron run goes on in its own thread)."""
    cid = call.call_id
    parent = tree.parent[cid]
    if cr.role == "aux_subagent" and parent is None and cr.linked_call is None:
        cr.linked_call = walk.spawns.match(text.first_user)
        if cr.linked_call is not None and walk.spawns.fresh:
            walk.own_spawn.add(cid)
    if cr.role == "aux_summary":
        cr.linked_call = parent if parent is not None else walk.last_main_ok
        walk.summaries.append(cid)
    if cr.continuation:
        cr.linked_call = _find_summary(tree, call, walk.summaries, walk.summary_snippets)
        tip = roles[cr.linked_call].linked_call if cr.linked_call else None
        if gt is None and tip is not None and roles[tip].role not in _MAIN_OR_TIP:
            # A sub-agent (or cron run) that compacted goes on in its own thread.
            cr = CallRole(
                roles[tip].role,
                f"{roles[tip].role} after compaction: {cr.reason}",
                linked_call=cr.linked_call,
            )
    return cr


def _main_fingerprint(
    tree: CallTree, texts: dict[str, CallText], cache: TextCache
) -> tuple[str | None, bool]:
    """System identity of the main agent: the earliest unmarked root offering tools.

    Chosen before classifying so that a tool-less side call logged first (a title request
    with an unknown prompt) cannot become the main agent. The marker texts it reads are kept
    in `texts` (and its marker look-ups in `cache`) for the classification that follows.
    """
    fallback: str | None = None
    for call in tree.calls:
        cid = call.call_id
        if tree.parent[cid] is not None or call.endpoint == "non_model":
            continue
        if call.turn_type or cid in tree.failed:
            continue
        text = texts[cid] = call_text(call, cache)
        if detect_marker(call, text, cache=cache) is not None:
            continue
        if call.tools:
            return _identity(call.system), True
        fallback = fallback or _identity(call.system)
    return fallback, False


def _classify_root(
    tree: CallTree,
    call: Call,
    first_user: str,
    spawns: _SpawnIndex,
    roles: dict[str, CallRole],
    main_identity: str | None,
    main_tools: bool,
) -> CallRole:
    earlier = tree.resend_of.get(call.call_id)
    if earlier is not None:
        return CallRole(
            roles[earlier].role,
            f"re-send of root {_label(tree.by_id[earlier])}",
            linked_call=roles[earlier].linked_call if roles[earlier].role != "main" else None,
        )
    link = spawns.match(first_user)
    if link is not None:
        return CallRole(
            "aux_subagent",
            f"first user message is the spawn prompt of call {_label(tree.by_id[link])}",
            linked_call=link,
        )
    if main_identity is None or _identity(call.system) == main_identity:
        return CallRole("main", "main conversation root")
    if not main_tools:
        return CallRole("main", "main conversation root (no tool-using root to compare with)")
    if not call.tools:
        return CallRole("aux_utility", "tool-less call whose system prompt differs from main")
    return CallRole("aux_subagent", "system prompt differs from main (structural fallback)")


def _find_summary(
    tree: CallTree, call: Call, summaries: list[str], snippets: dict[str, list[str]]
) -> str | None:
    if not summaries:
        return None
    haystack = normalize_ws(" ".join(block_text(m.get("content")) for m in call.messages[:3]))
    for sid in reversed(summaries):
        if sid not in snippets:
            snippets[sid] = _snippets(_summary_body(tree.by_id[sid]))
        for snippet in snippets[sid]:
            if snippet and snippet in haystack:
                return sid
    return summaries[-1]


def _first_message_key(call: Call) -> str:
    """Match key of a continuation's first message (the compacted history it starts from)."""
    return match_key(call.messages[0], ignore_patterns=ALL_IGNORE_PATTERNS) if call.messages else ""


def _assign_segments(tree: CallTree, roles: dict[str, CallRole]) -> int:
    top = -1
    # Continuations of one summary are one segment (a failed first try is re-sent extended),
    # as long as they carry the same compacted history: OpenClaw 2026.9 compacts again after
    # a context overflow without a model call, re-distilling the previous summary's text into
    # a new first message, and that is a new segment.
    by_summary: dict[str, list[tuple[str, int]]] = {}
    for call in tree.calls:
        cid = call.call_id
        cr = roles[cid]
        if cr.role != "main":
            continue
        anc = tree.parent[cid]
        while anc is not None and roles[anc].role != "main":
            anc = tree.parent[anc]
        via = None if cr.continuation or anc is not None else _maintenance_root(tree, roles, cid)
        if (cr.continuation or via is not None) and anc is None:
            # Below a maintenance turn that was the first request on a compacted history, the
            # first main call starts that compaction's segment (`maintenance_after_compaction`).
            link = cr.linked_call if via is None else roles[via].linked_call
            head = _first_message_key(call)
            same = [seg for key, seg in by_summary.get(link or "", []) if key == head]
            if link is not None and same:
                cr.segment = same[0]
                continue
            top += 1
            cr.segment = top
            if link is not None:
                by_summary.setdefault(link, []).append((head, top))
        elif anc is not None and roles[anc].segment is not None:
            cr.segment = roles[anc].segment
        else:
            resend = tree.resend_of.get(cid)
            if resend is not None and roles[resend].segment is not None:
                cr.segment = roles[resend].segment
            else:
                top = max(top, 0)
                cr.segment = top
    return top + 1


def _maintenance_root(tree: CallTree, roles: dict[str, CallRole], cid: str) -> str | None:
    """The root above `cid` when it is a tip extension linked to a summary (a heartbeat or
    memory flush sent first on a compacted history) and only tip extensions lie between."""
    p = tree.parent[cid]
    while p is not None and roles[p].role in TIP_EXTENSIONS:
        if tree.parent[p] is None:
            link = roles[p].linked_call
            return p if link is not None and roles[link].role == "aux_summary" else None
        p = tree.parent[p]
    return None


def _assign_threads(tree: CallTree, roles: dict[str, CallRole]) -> None:
    for call in tree.calls:
        cid = call.call_id
        cr = roles[cid]
        if cr.role == "main":
            cr.thread = "main"
            continue
        parent = tree.parent[cid]
        link = roles[cr.linked_call] if cr.linked_call in roles else None
        tip = link.linked_call if link is not None and link.role == "aux_summary" else None
        if parent is not None and roles[parent].role == cr.role:
            cr.thread = roles[parent].thread
        elif parent is None and tip is not None and roles[tip].role == cr.role:
            cr.thread = roles[tip].thread  # the same sub-agent after its compaction
        else:
            cr.thread = f"{cr.role}:{_label(call)}"
