"""Pure layout of an episode call tree: depth across, branch lanes down (no Plotly here).

`tree_layout` places every call on the canvas (`TreeNode`), draws its edges (`TreeEdge`) and
labels the leaves; `tree_figure` in `clawviz.figures.tree` turns that into one scatter trace.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from clawviz.figures.palette import CATEGORY_COLOURS, KEPT_IN_DROPPED, PRUNED_PREFIX
from clawviz.recon import retry_note
from clawviz.types import Call, CallDecision, EpisodeAnalysis, PathInfo, Role, State, call_label

MAIN_BAND_GAP = 1.5
"""Empty lanes between the main band and the auxiliary band."""
TREE_WINDOW = 60
"""Depth steps a long tree shows at once (about 15 px per call on a laptop screen)."""


@dataclass
class TreeNode:
    """One call placed on the canvas."""

    call_id: str
    index: int
    x: float
    y: float
    role: str
    state: str
    reason: str | None
    category: str
    thread: str
    segment: int | None
    is_aux: bool
    thread_root: str
    """First call of this node's lane group (the node shown when auxiliary threads collapse)."""
    thread_size: int = 1
    y_collapsed: float | None = None
    model: str | None = None
    tokens: int | None = None
    http_status: int | None = None
    failure: str | None = None
    path_ids: list[str] = field(default_factory=list)
    advantage: float | None = None
    reward: float | None = None
    label: str = ""
    """The call's number (`clawviz.types.call_label`), drawn on the node."""
    source_file: str = ""
    seq: int | None = None
    note: str = ""
    """Why it is where it is beyond its state: the retry note, or which path beat its branch."""
    pins: list[tuple[str, str]] = field(default_factory=list)
    """(code, evidence) of the episode reasons pinned on this call (it caused them)."""
    concerns: list[str] = field(default_factory=list)
    """Codes of episode reasons this call is one of several calls of (e.g. a counted leaf)."""


@dataclass
class Pin:
    """An episode reason drawn on the call that caused it."""

    call_id: str
    code: str
    evidence: str


@dataclass
class TreeEdge:
    """A drawn link between two calls; `kind` is a key of EDGE_STYLES."""

    src: str
    dst: str
    kind: str


@dataclass
class LeafLabel:
    """Reward / advantage written next to the last call of a kept path."""

    path_id: str
    call_id: str
    reward: float | None
    advantage: float | None
    ppo_return: float | None


@dataclass
class TreeLayout:
    """Positions and links of every call of one episode."""

    nodes: list[TreeNode]
    edges: list[TreeEdge]
    boundaries: list[float]
    """x positions of compaction boundaries (drawn as vertical dashed lines)."""
    leaves: list[LeafLabel]
    paths: dict[str, list[str]]
    n_main_lanes: int
    aux_band_start: float
    pins: list[Pin] = field(default_factory=list)
    dropped: bool = False
    """The episode is dropped: its kept path is drawn in `KEPT_IN_DROPPED` grey."""

    @property
    def by_id(self) -> dict[str, TreeNode]:
        return {n.call_id: n for n in self.nodes}


def node_category(decision: CallDecision | None, dropped: bool = False) -> str:
    """The legend category of a call: kept, pruned: reason, failed, or the auxiliary kind; a
    kept call of a dropped episode is `KEPT_IN_DROPPED`."""
    if decision is None:
        return "not analysed"
    if decision.state == State.KEPT:
        return KEPT_IN_DROPPED if dropped else State.KEPT
    if decision.state == State.FAILED:
        return State.FAILED
    if decision.state == State.AUXILIARY:
        return decision.role if decision.role in CATEGORY_COLOURS else Role.AUX_UTILITY
    if decision.state == State.PRUNED:
        key = f"{PRUNED_PREFIX}{decision.reason}"
        return key if key in CATEGORY_COLOURS else State.PRUNED
    return "unattached" if decision.reason == "unattached" else "not analysed"


def _is_aux(decision: CallDecision | None) -> bool:
    return decision is not None and decision.role.startswith("aux_")


def _group_key(decision: CallDecision | None, call_id: str) -> str:
    """Calls in one lane group share a tree: main, or one auxiliary thread."""
    if decision is None or not _is_aux(decision):
        return "main"
    return f"{decision.role}:{decision.thread or call_id}"


class _Lanes:
    """First-fit lane allocator: a lane is free for x if everything on it lies left of x."""

    def __init__(self) -> None:
        self.max_x: list[float] = []

    def take(self, x: float, at_least: int = 0) -> int:
        while len(self.max_x) < at_least:
            self.max_x.append(float("-inf"))
        for i in range(at_least, len(self.max_x)):
            if self.max_x[i] < x:
                return i
        self.max_x.append(float("-inf"))
        return len(self.max_x) - 1

    def mark(self, lane: int, x: float) -> None:
        self.max_x[lane] = max(self.max_x[lane], x)

    @property
    def count(self) -> int:
        return len(self.max_x)


@dataclass
class _Links:
    """How calls hang together for drawing: tree parent within a lane group, else a cross link."""

    ids: list[str]
    index: dict[str, int]
    dec: dict[str, CallDecision | None]
    group: dict[str, str]
    tree_parent: dict[str, str | None]
    cross_parent: dict[str, str | None]
    children: dict[str, list[str]]


def links_of(calls: list[Call], analysis: EpisodeAnalysis | None) -> _Links:
    """Tree parents (same lane group), cross links (sub-agent, summary, compaction) and children."""
    decisions = analysis.decisions if analysis else {}
    ids = [c.call_id for c in calls]
    known = set(ids)
    dec = {cid: decisions.get(cid) for cid in ids}
    group = {cid: _group_key(dec[cid], cid) for cid in ids}
    tree_parent: dict[str, str | None] = {}
    cross_parent: dict[str, str | None] = {}
    for cid in ids:
        d = dec[cid]
        parent = d.parent_call if d and d.parent_call in known else None
        if parent is not None and group[parent] == group[cid]:
            tree_parent[cid], cross_parent[cid] = parent, None
        else:
            tree_parent[cid] = None
            linked = d.linked_call if d and d.linked_call in known else None
            cross_parent[cid] = parent or linked
    children: dict[str, list[str]] = defaultdict(list)
    for cid in ids:
        tp = tree_parent[cid]
        if tp:
            children[tp].append(cid)
    index = {cid: i for i, cid in enumerate(ids)}
    return _Links(ids, index, dec, group, tree_parent, cross_parent, children)


def x_positions(links: _Links) -> dict[str, float]:
    """x: one step right of whatever a call continues; unlinked roots sit under the latest main
    call before them, so auxiliary work appears where it happened in time."""
    x: dict[str, float] = {}
    last_main_x = 0.0
    for cid in links.ids:
        anchor = links.tree_parent[cid] or links.cross_parent[cid]
        is_main = links.group[cid] == "main"
        if anchor is not None and anchor in x:
            x[cid] = x[anchor] + 1
        else:
            x[cid] = 0.0 if is_main else last_main_x
        if is_main:
            last_main_x = max(last_main_x, x[cid])
    return x


def subtree_sizes(links: _Links) -> dict[str, int]:
    """Number of calls in each call's subtree (itself included)."""
    size: dict[str, int] = {}
    for cid in reversed(links.ids):
        size[cid] = 1 + sum(size[c] for c in links.children[cid])
    return size


def child_order(links: _Links, size: dict[str, int], cid: str) -> list[str]:
    """Children of a call, the kept continuation first (the episode's spine is a straight line),
    then larger subtrees first, then call order."""

    def rank(c: str) -> tuple[bool, int, int]:
        d = links.dec[c]
        return (d is None or d.state != State.KEPT, -size[c], links.index[c])

    return sorted(links.children[cid], key=rank)


def place_subtree(
    root: str,
    lanes: _Lanes,
    first_lane: int,
    x: dict[str, float],
    order: dict[str, list[str]],
    lane_of: dict[str, int],
) -> None:
    """Depth-first, first child on its parent's lane; a later sibling takes a lane only after the
    earlier siblings' whole subtrees are placed, so siblings stay adjacent."""
    stack: list[tuple[str, int | None, int]] = [(root, first_lane, first_lane)]
    while stack:
        cid, lane, parent_lane = stack.pop()
        if lane is None:
            lane = lanes.take(x[cid], at_least=parent_lane + 1)
        lane_of[cid] = lane
        lanes.mark(lane, x[cid])
        kids = order[cid]
        for i in range(len(kids) - 1, -1, -1):
            stack.append((kids[i], lane if i == 0 else None, lane))


@dataclass
class _Placement:
    """Lanes of every call, and the thread (lane group root) each call belongs to."""

    lane_of: dict[str, int]
    n_main_lanes: int
    aux_start: float
    thread_root: dict[str, str]
    thread_size: dict[str, int]
    collapsed_y: dict[str, float]


def _members(root: str, children: dict[str, list[str]]) -> list[str]:
    members = [root]
    i = 0
    while i < len(members):
        members.extend(children[members[i]])
        i += 1
    return members


def place_all(links: _Links, x: dict[str, float]) -> _Placement:
    """Main trees in the main band, auxiliary threads below it (and their collapsed rows)."""
    size = subtree_sizes(links)
    order = {cid: child_order(links, size, cid) for cid in links.ids}
    lane_of: dict[str, int] = {}
    main_lanes = _Lanes()
    roots = [cid for cid in links.ids if links.tree_parent[cid] is None]
    for r in roots:
        if links.group[r] == "main":
            place_subtree(r, main_lanes, main_lanes.take(x[r]), x, order, lane_of)
    aux_start = max(main_lanes.count, 1) - 1 + MAIN_BAND_GAP
    aux_lanes, collapsed_lanes = _Lanes(), _Lanes()
    thread_root: dict[str, str] = {}
    thread_size: dict[str, int] = {}
    collapsed_y: dict[str, float] = {}
    for r in roots:
        if links.group[r] != "main":
            place_subtree(r, aux_lanes, aux_lanes.take(x[r]), x, order, lane_of)
            lane = collapsed_lanes.take(x[r])
            collapsed_lanes.mark(lane, x[r])
            collapsed_y[r] = aux_start + lane
        members = _members(r, links.children)
        for m in members:
            thread_root[m] = r
        thread_size[r] = len(members)
    return _Placement(lane_of, main_lanes.count, aux_start, thread_root, thread_size, collapsed_y)


def kept_values(
    decision: CallDecision | None, kept_paths: list[PathInfo], analysis: EpisodeAnalysis | None
) -> tuple[float | None, float | None]:
    """(advantage, reward) shown on a kept call: its kept paths' values, else the episode's."""
    if decision is None or decision.state != State.KEPT:
        return None, None
    adv = next((p.advantage for p in kept_paths if p.advantage is not None), None)
    reward = next((p.reward for p in kept_paths if p.reward is not None), None)
    if analysis is not None:
        adv = analysis.advantage if adv is None else adv
        reward = analysis.reward if reward is None else reward
    return adv, reward


def _nodes(
    calls: list[Call],
    links: _Links,
    x: dict[str, float],
    placed: _Placement,
    analysis: EpisodeAnalysis | None,
) -> list[TreeNode]:
    paths = analysis.paths if analysis else []
    path_of: dict[str, list[str]] = defaultdict(list)
    for p in paths:
        for cid in p.call_ids:
            path_of[cid].append(p.path_id)
    path_by_id = {p.path_id: p for p in paths}
    dropped = analysis is not None and analysis.status != "kept"
    pins: dict[str, list[tuple[str, str]]] = defaultdict(list)
    concerns: dict[str, list[str]] = defaultdict(list)
    for r in analysis.reasons if analysis else []:
        if r.call_id:
            pins[r.call_id].append((str(r.code), r.evidence))
        for cid in r.call_ids:
            if cid != r.call_id:
                concerns[cid].append(str(r.code))
    nodes: list[TreeNode] = []
    for c in calls:
        cid = c.call_id
        d = links.dec[cid]
        is_aux = links.group[cid] != "main"
        lane = placed.lane_of[cid]
        y = (placed.aux_start + lane) if is_aux else float(lane)
        kept_paths = [path_by_id[p] for p in path_of[cid] if path_by_id[p].state == State.KEPT]
        adv, reward = kept_values(d, kept_paths, analysis)
        root = placed.thread_root.get(cid, cid)
        nodes.append(
            TreeNode(
                call_id=cid,
                index=links.index[cid],
                x=x[cid],
                y=y,
                role=d.role if d else "?",
                state=d.state if d else "not analysed",
                reason=d.reason if d else None,
                category=node_category(d, dropped),
                thread=d.thread if d else "",
                segment=d.segment if d else None,
                is_aux=is_aux,
                thread_root=root,
                thread_size=placed.thread_size.get(root, 1),
                y_collapsed=(placed.collapsed_y.get(cid) if is_aux else y),
                model=c.model,
                tokens=c.generated_tokens,
                http_status=c.http_status,
                failure=c.failure,
                path_ids=path_of[cid],
                advantage=adv,
                reward=reward,
                label=call_label(c),
                source_file=c.source_file,
                seq=c.seq,
                note=_note(d, path_of[cid], path_by_id),
                pins=pins.get(cid, []),
                concerns=concerns.get(cid, []),
            )
        )
    return nodes


def _note(d: CallDecision | None, path_ids: list[str], paths: dict[str, PathInfo]) -> str:
    """A call's retry note, else (a not_longest call) why its branch lost."""
    if d is None:
        return ""
    note = retry_note(d.role_reason)
    if note or d.reason != "not_longest":
        return note
    lost = [paths[p] for p in path_ids if paths[p].state != State.KEPT and paths[p].why]
    return lost[0].why if lost else ""


def edges_of(links: _Links) -> list[TreeEdge]:
    """A `continues` edge to each tree parent, a styled cross edge to each cross link, and a
    `retry` edge from each failed or replaced call to the call that retried it."""
    edges: list[TreeEdge] = []
    known = set(links.ids)
    for cid in links.ids:
        tp, cp = links.tree_parent[cid], links.cross_parent[cid]
        if tp:
            edges.append(TreeEdge(tp, cid, "continues"))
        elif cp:
            edges.append(TreeEdge(cp, cid, _cross_kind(links.dec[cid])))
        d = links.dec[cid]
        if d is not None and d.retry_of in known and d.retry_of not in (tp, cp):
            edges.append(TreeEdge(d.retry_of, cid, "retry"))
    return edges


def compaction_boundaries(links: _Links, x: dict[str, float]) -> list[float]:
    """x of each main call that starts a new tree after a linked call (compaction)."""
    out = set()
    for cid in links.ids:
        d = links.dec[cid]
        starts_tree = links.tree_parent[cid] is None and links.cross_parent[cid] is not None
        if (
            links.group[cid] == "main"
            and starts_tree
            and d is not None
            and d.linked_call is not None
        ):
            out.add(x[cid] - 0.5)
    return sorted(out)


def leaf_labels(analysis: EpisodeAnalysis | None, known: set[str]) -> list[LeafLabel]:
    """Reward / advantage labels at the last call of each kept path."""
    return [
        LeafLabel(p.path_id, p.call_ids[-1], p.reward, p.advantage, p.ppo_return)
        for p in (analysis.paths if analysis else [])
        if p.state == State.KEPT and p.call_ids and p.call_ids[-1] in known
    ]


def tree_layout(calls: list[Call], analysis: EpisodeAnalysis | None) -> TreeLayout:
    """Place calls: depth along x, branch lanes along y (main band on top, auxiliary below).

    Children of a node stay adjacent (depth-first, first child on the parent's lane); a
    compaction continuation carries on to the right of the summary it continues; sub-agent and
    utility threads sit in their own lanes under the main band, below where they happened.
    """
    links = links_of(calls, analysis)
    x = x_positions(links)
    placed = place_all(links, x)
    known = set(links.ids)
    return TreeLayout(
        nodes=_nodes(calls, links, x, placed, analysis),
        edges=edges_of(links),
        boundaries=compaction_boundaries(links, x),
        leaves=leaf_labels(analysis, set(links.ids)),
        paths={p.path_id: list(p.call_ids) for p in (analysis.paths if analysis else [])},
        n_main_lanes=placed.n_main_lanes,
        aux_band_start=placed.aux_start,
        pins=[
            Pin(r.call_id, str(r.code), r.evidence)
            for r in (analysis.reasons if analysis else [])
            if r.call_id in known
        ],
        dropped=analysis is not None and analysis.status != "kept",
    )


def _cross_kind(d: CallDecision | None) -> str:
    if d is None:
        return "aux"
    if d.role == Role.AUX_SUBAGENT:
        return "subagent"
    if d.role == Role.AUX_SUMMARY:
        return "summary"
    if d.role == Role.MAIN:
        return "compaction"
    return "aux"
