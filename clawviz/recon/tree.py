"""Call tree of one episode (PIPELINE §2): parent = longest message prefix, via a trie.

Each trie node is one canonical message (`canonical.match_key`) below its prefix. A successful
call owns the node at the end of `messages + [response]`; a later call's parent is the owner of
the deepest owned node on its own message path. Walking the trie is linear in the messages.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import islice
from typing import TYPE_CHECKING

from clawviz.recon.canonical import match_key, normalize_ws
from clawviz.recon.markers import ALL_IGNORE_PATTERNS
from clawviz.types import Call, Message

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


def order_key(call: Call) -> tuple:
    """Reconstruction order: seq if present, else request timestamp, then file position."""
    return (
        call.seq if call.seq is not None else math.inf,
        call.t_request if call.t_request is not None else math.inf,
        call.source_file,
        call.line,
        call.call_id,
    )


@lru_cache(maxsize=256)
def system_fingerprint(system: str) -> str:
    """Hash of the system prompt without volatile spans (billing header, reminders)."""
    text = system
    for p in ALL_IGNORE_PATTERNS:
        text = p.sub("", text)
    return hashlib.blake2b(normalize_ws(text).encode(), digest_size=8).hexdigest()


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


def build_call_tree(calls: list[Call]) -> CallTree:
    """Rebuild parent links for the calls of one episode (independent of input order)."""
    ordered = sorted(calls, key=order_key)
    trie = _Trie()
    owner: dict[int, str] = {}
    requests: dict[tuple[int, str], str] = {}
    parent: dict[str, str | None] = {}
    resend_of: dict[str, str | None] = {}
    children: dict[str, list[str]] = {c.call_id: [] for c in ordered}
    failed: set[str] = set()
    by_obj = trie.by_obj
    step = trie.step

    # The previous request's messages, and the node and best owner after each of them.
    prev: list[Message] = []
    prev_nodes: list[int] = []
    prev_best: list[str | None] = []
    for call in ordered:
        cid = call.call_id
        msgs = call.messages
        # A request usually re-sends the previous one plus new turns: resume its walk after
        # the shared messages (equal messages take the same edges). Only the previous call
        # has set an owner since, one node below its own messages, so the prefix is unchanged.
        k = min(len(msgs), len(prev))
        if not k or msgs[k - 1] is not prev[k - 1] or msgs[:k] != prev[:k]:
            k = 0
        nodes, bests = prev_nodes[:k], prev_best[:k]
        node = nodes[-1] if k else 0
        best: str | None = bests[-1] if k else None
        # One walk finds the deepest owned prefix and lays down this request's own path, so
        # an identical later request finds it.
        for m in islice(msgs, k, None):
            nxt = by_obj.get((node, id(m)))
            node = step(node, m) if nxt is None else nxt
            hit = owner.get(node)
            if hit is not None:
                best = hit
            nodes.append(node)
            bests.append(best)
        prev, prev_nodes, prev_best = msgs, nodes, bests
        req_key = (node, system_fingerprint(call.system)) if call.messages else None
        earlier = requests.get(req_key) if req_key else None
        if earlier is not None and parent[earlier] != best:
            # The same request under another parent is a new branch, not a re-send: with tool
            # ids ignored, a re-sent branch repeats the abandoned one's requests one level down.
            earlier = None
        parent[cid] = best
        resend_of[cid] = earlier
        if req_key is not None:
            requests[req_key] = cid
        if best is not None:
            children[best].append(cid)
        if is_failed(call):
            failed.add(cid)
        elif call.response is not None and call.endpoint != "non_model":
            owner[step(node, call.response)] = cid

    return CallTree(
        calls=ordered,
        by_id={c.call_id: c for c in ordered},
        index={c.call_id: i for i, c in enumerate(ordered)},
        parent=parent,
        children=children,
        resend_of=resend_of,
        failed=frozenset(failed),
    )
