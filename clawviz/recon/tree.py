"""Call tree of one episode (PIPELINE §2): parent = longest message prefix, via a trie.

Each trie node is one canonical message (`canonical.match_key`) below its prefix. A successful
call owns the node at the end of `messages + [response]`; a later call's parent is the owner of
the deepest owned node on its own message path. Walking the trie is linear in the messages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import islice
from typing import TYPE_CHECKING

from clawviz.recon.canonical import match_key, normalize_ws, strip_patterns
from clawviz.recon.edits import (
    UNEXPLAINED,
    Alignment,
    Edit,
    ItemMemo,
    align_history,
    dropped_tools,
)
from clawviz.recon.markers import ALL_IGNORE_PATTERNS, is_memory_flush_system
from clawviz.recon.matchview import Ignored, ViewWalker
from clawviz.types import Call, Message
from clawviz.types import call_order_key as order_key

if TYPE_CHECKING:
    import networkx as nx


@dataclass
class CallTree:
    """Parent links between the calls of one episode, plus the ordered call list."""

    calls: list[Call]
    """Calls in reconstruction order (seq, else request time, then file position)."""
    by_id: dict[str, Call]
    index: dict[str, int]
    parent: dict[str, str | None]
    children: dict[str, list[str]]
    resend_of: dict[str, str | None]
    """For an identical re-send (same canonical messages and system): the latest earlier one."""
    failed: frozenset[str] = frozenset()
    """Ids of the calls `is_failed` holds for (asked many times per call downstream)."""
    tolerated: dict[str, str] = field(default_factory=dict)
    """Calls whose parent only a tolerance rule found: rule code and what it ignored."""
    ignored: dict[str, tuple[Ignored, ...]] = field(default_factory=dict)
    """Per call, the parts of its request that matching left out or read in their kept form
    (`recon.matchview`); calls where nothing was ignored are absent."""
    edits: dict[str, tuple[Edit, ...]] = field(default_factory=dict)
    """Per call whose parent the content-anchored alignment found (`recon.edits`): every edit
    of its history against the parent's request plus reply, explained by a rule or not."""

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The tree as a networkx graph (edges parent -> child), built on first use."""
        import networkx as nx  # only the figures use it: the command line does not load it

        g = nx.DiGraph()
        g.add_nodes_from(c.call_id for c in self.calls)
        g.add_edges_from((p, c) for c, p in self.parent.items() if p is not None)
        return g

    @property
    def roots(self) -> list[str]:
        return [c.call_id for c in self.calls if self.parent[c.call_id] is None]

    @cached_property
    def depths(self) -> dict[str, int]:
        """Number of ancestors of each call (parents always come earlier in `calls`)."""
        out: dict[str, int] = {}
        for c in self.calls:
            p = self.parent[c.call_id]
            out[c.call_id] = 0 if p is None else out[p] + 1
        return out


def is_failed(call: Call) -> bool:
    """A call that produced no usable response (never a parent)."""
    if call.failure is not None:
        return True
    if call.http_status is not None and not 200 <= call.http_status < 300:
        return True
    return call.endpoint != "non_model" and call.response is None


def failure_code(call: Call) -> str:
    """The failure reason code of a failed call."""
    if call.failure:
        return call.failure
    if call.response is None and call.http_status is None:
        return "orphaned_request"
    return "failed_http"


@lru_cache(maxsize=256)
def system_fingerprint(system: str) -> str:
    """Hash of the system prompt without volatile spans (billing header, reminders)."""
    text = strip_patterns(system, ALL_IGNORE_PATTERNS)
    return hashlib.blake2b(normalize_ws(text).encode(), digest_size=8).hexdigest()


def _context_only(message: Message) -> bool:
    """A user message whose every block is text made only of ignored spans (context blocks)."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    blocks = [content] if isinstance(content, str) else content
    if not isinstance(blocks, list) or not blocks:
        return False
    seen = False
    for b in blocks:
        text = b if isinstance(b, str) else b.get("text") if isinstance(b, dict) else None
        if not isinstance(text, str) or (isinstance(b, dict) and b.get("type") != "text"):
            return False
        if text.strip():
            if strip_patterns(text, ALL_IGNORE_PATTERNS).strip():
                return False
            seen = True
    return seen


def history_messages(messages: list[Message], memo: dict[int, bool] | None = None) -> list[Message]:
    """The messages a request matches on: leading context-only user messages left out.

    Claude Code 2.0 opens the first request after a compaction with a user message of
    `<system-reminder>` attachments (files it re-read, the todo list) before the summary
    message; the history it keeps, and re-sends on --resume, starts at the summary
    (rule `leading_context_block`, DECISIONS.md). `memo`: `_context_only` by message object,
    for callers that keep the messages alive (the calls of an episode re-send the same ones).
    """
    k = 0
    while k < len(messages) - 1:
        m = messages[k]
        if memo is None:
            only = _context_only(m)
        else:
            cached = memo.get(id(m))
            if cached is None:
                cached = memo[id(m)] = _context_only(m)
            only = cached
        if not only:
            break
        k += 1
    return messages[k:] if k else messages


class _Trie:
    """Trie of messages keyed by `match_key`, computing keys only where paths branch.

    The store shares one dict per distinct message, so the same object always takes the same
    edge. A node's children are told apart by match key only once a second, different object
    arrives below it: in a linear history (most of an episode) no key is ever computed. Each
    child still stands for exactly one match key, as if every edge were keyed by it.
    The calls keep every message alive, so ids are stable while the tree is built.
    """

    def __init__(self) -> None:
        self.by_obj: dict[tuple[int, int], int] = {}
        """(node, id(message)) -> child."""
        self.first: dict[int, tuple[Message, int]] = {}
        """The first child of a node and a message it stands for."""
        self.by_key: dict[int, dict[str, int]] = {}
        """Children by match key, for nodes where a second object arrived."""
        self.keys: dict[int, str] = {}
        self.n_nodes = 0

    def key(self, message: Message) -> str:
        k = self.keys.get(id(message))
        if k is None:
            k = self.keys[id(message)] = match_key(message, ignore_patterns=ALL_IGNORE_PATTERNS)
        return k

    def step(self, node: int, message: Message) -> int:
        """The child of `node` for `message`, created if no child has its match key."""
        edge = (node, id(message))
        child = self.by_obj.get(edge)
        if child is not None:
            return child
        first = self.first.get(node)
        if first is None:
            child = self._new()
            self.first[node] = (message, child)
        elif message == first[0]:
            # Equal content has an equal key (a response and its copy in the next request).
            child = first[1]
        else:
            keyed = self.by_key.get(node)
            if keyed is None:
                keyed = self.by_key[node] = {self.key(first[0]): first[1]}
            k = self.key(message)
            child = keyed.get(k)
            if child is None:
                child = keyed[k] = self._new()
        self.by_obj[edge] = child
        return child

    def _new(self) -> int:
        self.n_nodes += 1
        return self.n_nodes


_TOOL_ITEMS = ("tool_use", "tool_result")
_ALIGN_WINDOW = 200
"""Earlier calls a diverging request is aligned with by `_aligned_parent` (latest first)."""

# The names the tests and older callers use (the rule lives in `recon.edits`).
_Items = ItemMemo
_dropped_tools = dropped_tools


def item_memo() -> ItemMemo:
    """A fresh per-message memo of match items."""
    return ItemMemo()


def _aligned_parent(
    msgs: list[Message],
    owners: list[tuple[str, list[Message]]],
    covered: int,
    items: ItemMemo,
    anchors: set[str] | None,
    key: Callable[[Message], str],
) -> tuple[str, int, Alignment] | None:
    """The earlier call whose request plus reply `msgs` continues, but for edits of the rules.

    Each candidate (latest 200 successful calls) is aligned with `msgs` by
    `edits.align_history`, anchored on its reply. `anchors`: match keys of `msgs`; a candidate
    whose reply is not among them is passed over unaligned (None: align every candidate, for a
    history whose tool calls may have been dropped, when the reply itself is re-sent changed).
    Returns (call id, messages of the candidate's path, alignment) for the longest path longer
    than `covered` (fewer unexplained edits, then the latest, on a tie).
    """
    best: tuple[str, int, Alignment] | None = None
    for cid, path in reversed(owners[-_ALIGN_WINDOW:]):
        n = len(path)
        if n > len(msgs) + 1 or n <= covered or (best is not None and n < best[1]):
            continue
        if anchors is not None and key(path[-1]) not in anchors:
            continue
        got = align_history(path, msgs, items)
        if got is None or not got.edits:
            continue
        if best is None or n > best[1] or got.unexplained < best[2].unexplained:
            best = (cid, n, got)
    return best


def _tool_only(message: Message, items: ItemMemo) -> bool:
    """A message of tool calls or tool results only (an assistant message of only tool calls,
    a tool result message)."""
    its = items(message)[1]
    return bool(its) and all(i[0] in _TOOL_ITEMS for i in its)


def _private_copy_parent(
    msgs: list[Message],
    owners: list[tuple[str, list[Message]]],
    items: ItemMemo,
    covered: int,
) -> tuple[str, Alignment] | None:
    """The parent of a memory flush whose private copy of the history left out the tool calls
    and results (rule `openclaw_flush_private_copy`, OpenClaw 2026.8): the latest earlier call
    whose request plus reply, without its tool-only messages, is what `msgs` starts with, the
    longest such path first. Some tool-only message must be left out, and what is left of the
    path must be more than the `covered` messages an exact prefix already explains."""
    best: tuple[str, int, Alignment] | None = None
    for cid, path in reversed(owners[-_ALIGN_WINDOW:]):
        if best is not None and len(path) <= best[1]:
            continue
        kept = [m for m in path if not _tool_only(m, items)]
        n_left = len(path) - len(kept)
        if not n_left or not kept or len(kept) <= covered or len(kept) > len(msgs) - 1:
            continue
        if any(items(a) != items(b) for a, b in zip(kept, msgs, strict=False)):
            continue
        edit = Edit(
            "openclaw_flush_private_copy",
            len(kept),
            f"{n_left} tool call or tool result message(s) of the parent's history are left out",
        )
        best = (cid, len(path), Alignment(len(kept), (edit,)))
    return (best[0], best[2]) if best else None


def _tolerated_text(got: Alignment) -> str:
    """The role reason's note of a parent found by alignment: the rules that explained it."""
    codes = list(dict.fromkeys(e.code for e in got.edits))
    if codes == ["resume_dropped_tool_calls"]:
        n = sum(int(e.summary.split(": ", 1)[1].split(" ", 1)[0]) for e in got.edits)
        return (
            f"resume_dropped_tool_calls: {n} tool call(s) or result(s) of "
            f"the re-sent history are missing"
        )
    unexplained = got.unexplained
    head = ", ".join(c for c in codes if c != UNEXPLAINED)
    tail = f"{unexplained} unexplained edit(s)" if unexplained else ""
    return f"{head or 'aligned'}: " + "; ".join(
        x for x in (tail, *[e.summary for e in got.edits][:3]) if x
    )


def build_call_tree(calls: list[Call], *, match_rules: bool = True) -> CallTree:
    """Rebuild parent links for the calls of one episode (independent of input order).

    Each request is matched by `matchview.match_view` of its messages (what the harness keeps
    of it); `match_rules=False` matches the messages as sent (strict prefix matching, kept for
    the self-check's tests and for comparison).
    """
    ordered = sorted(calls, key=order_key)
    b = _Builder(ordered, match_rules)
    for call in ordered:
        b.add(call)
    return CallTree(
        calls=ordered,
        by_id={c.call_id: c for c in ordered},
        index={c.call_id: i for i, c in enumerate(ordered)},
        parent=b.parent,
        children=b.children,
        resend_of=b.resend_of,
        failed=frozenset(b.failed),
        tolerated=b.tolerated,
        ignored=b.ignored,
        edits=b.edits,
    )


class _Builder:
    """The state of `build_call_tree` while it adds calls in order."""

    def __init__(self, ordered: list[Call], match_rules: bool) -> None:
        self.match_rules = match_rules
        self.trie = _Trie()
        self.owner: dict[int, str] = {}
        self.requests: dict[int, tuple[str, str]] = {}
        """Per trie node, the system prompt and id of the latest request ending on it."""
        self.requests_by_system: dict[int, dict[str, str]] = {}
        """Per node where requests with different system prompts ended: the latest request by
        `system_fingerprint` (computed only there; most requests end on a node of their own)."""
        self.context_only: dict[int, bool] = {}
        self.parent: dict[str, str | None] = {}
        self.resend_of: dict[str, str | None] = {}
        self.children: dict[str, list[str]] = {c.call_id: [] for c in ordered}
        self.failed: set[str] = set()
        self.ignored: dict[str, tuple[Ignored, ...]] = {}
        self.tolerated: dict[str, str] = {}
        self.edits: dict[str, tuple[Edit, ...]] = {}
        self.walker = ViewWalker()
        self.items = ItemMemo()
        self.owners: list[tuple[str, list[Message]]] = []
        """Successful calls in order with their messages + reply node (for `_aligned_parent`)."""
        self.covered: dict[str, int] = {}
        # The previous request's messages, and the node and best owner after each of them.
        self.prev: list[Message] = []
        self.prev_nodes: list[int] = []
        self.prev_best: list[str | None] = []

    def _view(self, call: Call) -> list[Message]:
        if not self.match_rules:
            return call.messages
        msgs, why = self.walker.view(history_messages(call.messages, self.context_only))
        if why:
            self.ignored[call.call_id] = why
        return msgs

    def _walk(self, msgs: list[Message]) -> tuple[list[int], str | None, int | None]:
        """The trie nodes of `msgs`, the deepest owner on them and where they first left the
        trie. A request usually re-sends the previous one plus new turns: the walk resumes after
        the shared messages (equal messages take the same edges; only the previous call has set
        an owner since, one node below its own messages, so the prefix is unchanged)."""
        prev = self.prev
        k = min(len(msgs), len(prev))
        # Equal, not only the same objects: a harness that moves its cache breakpoint re-sends
        # the previous request's last message as an equal copy, and equal messages take the
        # same edges (`_Trie.step`), so the walk still resumes after it.
        last_differs = k and msgs[k - 1] is not prev[k - 1] and msgs[k - 1] != prev[k - 1]
        if not k or last_differs or msgs[:k] != prev[:k]:
            k = 0
        # In place: only this walk reads the previous request's lists (no copy per call).
        nodes, bests = self.prev_nodes, self.prev_best
        del nodes[k:], bests[k:]
        node = nodes[-1] if k else 0
        best: str | None = bests[-1] if k else None
        # One walk finds the deepest owned prefix and lays down this request's own path, so an
        # identical later request finds it.
        trie, by_obj, owner = self.trie, self.trie.by_obj, self.owner
        diverged: int | None = None
        for i, m in enumerate(islice(msgs, k, None), start=k):
            nxt = by_obj.get((node, id(m)))
            if nxt is None:
                n_before = trie.n_nodes
                node = trie.step(node, m)
                if diverged is None and trie.n_nodes != n_before:
                    diverged = i
            else:
                node = nxt
            hit = owner.get(node)
            if hit is not None:
                best = hit
            nodes.append(node)
            bests.append(best)
        self.prev, self.prev_nodes, self.prev_best = msgs, nodes, bests
        return nodes, best, diverged

    def _aligned(self, call: Call, msgs: list[Message], best: str | None, diverged: int | None):
        """`best`, or the earlier call whose request plus reply `msgs` re-sends edited.

        Only asked when the trie walk left every earlier path before the last message (no
        earlier request sent that message there, yet more follow: a re-rendered history)."""
        if not self.match_rules or diverged is None or diverged >= len(msgs) - 1:
            return best
        got = self._aligned_by_rules(call.call_id, msgs, best, diverged)
        if got is best and is_memory_flush_system(call.system):
            covered = self.covered.get(best, 0) if best else 0
            copy = _private_copy_parent(msgs, self.owners, self.items, covered)
            if copy is not None:
                self.tolerated[call.call_id] = _tolerated_text(copy[1])
                self.edits[call.call_id] = copy[1].edits
                return copy[0]
        return got

    def _aligned_by_rules(
        self, cid: str, msgs: list[Message], best: str | None, diverged: int
    ) -> str | None:
        """`_aligned` by `edits.align_history` (the candidate's reply is the anchor)."""
        # A diverging message with tool items may be a re-sent one with tool calls dropped, whose
        # reply is then not re-sent as is: every candidate is aligned. Else only candidates
        # whose reply the history holds.
        covered = self.covered.get(best, 0) if best else 0
        n_max = len(msgs) + 1
        if not any(covered < len(path) <= n_max for _, path in self.owners[-_ALIGN_WINDOW:]):
            return best  # no earlier call explains more of this history than `best`
        content = msgs[diverged].get("content")
        tools = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _TOOL_ITEMS for b in content
        )
        key = self.trie.key
        anchors = None if tools else {key(m) for m in msgs[diverged:]}
        got = _aligned_parent(msgs, self.owners, covered, self.items, anchors, key)
        if got is None:
            return best
        self.tolerated[cid] = _tolerated_text(got[2])
        self.edits[cid] = got[2].edits
        return got[0]

    def _own(self, call: Call, msgs: list[Message], nodes: list[int]) -> None:
        """The node this call's response ends on is owned by it."""
        cid, step, walker = call.call_id, self.trie.step, self.walker
        assert call.response is not None
        if (
            cid in self.ignored
            and walker.ends_after_drop
            and msgs[-1].get("role") == "assistant"
            and call.response.get("role") == "assistant"
        ):
            # The reply joins the last assistant message (its prompt was not kept).
            base = nodes[-2] if len(nodes) > 1 else 0
            joined = walker.joined_reply(call.response)
            self.owner[step(base, joined)] = cid
            self.owners.append((cid, [*msgs[:-1], joined]))
        else:
            self.owner[step(nodes[-1] if nodes else 0, call.response)] = cid
            self.owners.append((cid, [*msgs, call.response]))
        self.covered[cid] = len(self.owners[-1][1])

    def _earlier_request(self, node: int, system: str, cid: str) -> str | None:
        """The latest earlier request ending on `node` with the same `system_fingerprint` (an
        identical re-send), recording `cid` as the latest. Equal prompts have equal
        fingerprints, so the fingerprint is computed only when two prompts differ."""
        keyed = self.requests_by_system.get(node)
        if keyed is None:
            last = self.requests.get(node)
            self.requests[node] = (system, cid)
            if last is None:
                return None
            if last[0] is system or last[0] == system:
                return last[1]
            keyed = self.requests_by_system[node] = {system_fingerprint(last[0]): last[1]}
        fp = system_fingerprint(system)
        earlier = keyed.get(fp)
        keyed[fp] = cid
        return earlier

    def add(self, call: Call) -> None:
        cid = call.call_id
        msgs = self._view(call)
        nodes, best, diverged = self._walk(msgs)
        best = self._aligned(call, msgs, best, diverged)
        node = nodes[-1] if nodes else 0
        earlier = self._earlier_request(node, call.system, cid) if call.messages else None
        if earlier is not None and self.parent[earlier] != best:
            # The same request under another parent is a new branch, not a re-send: with tool
            # ids ignored, a re-sent branch repeats the abandoned one's requests one level down.
            earlier = None
        self.parent[cid] = best
        self.resend_of[cid] = earlier
        if best is not None:
            self.children[best].append(cid)
        if is_failed(call):
            self.failed.add(cid)
        elif call.response is not None and call.endpoint != "non_model":
            self._own(call, msgs, nodes)
