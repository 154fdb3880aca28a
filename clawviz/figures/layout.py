"""Pure layout of an episode call tree: depth across, branch lanes down (no Plotly here).

`tree_layout` places every call on the canvas (`TreeNode`), draws its edges (`TreeEdge`) and
labels the leaves; `tree_figure` in `clawviz.figures.tree` turns that into one scatter trace.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from clawviz.figures.palette import CATEGORY_COLOURS
from clawviz.types import Call, CallDecision, EpisodeAnalysis

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

    @property
    def by_id(self) -> dict[str, TreeNode]:
        return {n.call_id: n for n in self.nodes}


def node_category(decision: CallDecision | None) -> str:
    """The legend category of a call: kept, pruned: reason, failed, or the auxiliary kind."""
    if decision is None:
        return "not analysed"
    if decision.state == "kept":
        return "kept"
    if decision.state == "failed":
        return "failed"
    if decision.state == "auxiliary":
        return decision.role if decision.role in CATEGORY_COLOURS else "aux_utility"
    if decision.state == "pruned":
        key = f"pruned: {decision.reason}"
        return key if key in CATEGORY_COLOURS else "pruned"
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


def tree_layout(calls: list[Call], analysis: EpisodeAnalysis | None) -> TreeLayout:
    """Place calls: depth along x, branch lanes along y (main band on top, auxiliary below).

    Children of a node stay adjacent (depth-first, first child on the parent's lane); a
    compaction continuation carries on to the right of the summary it continues; sub-agent and
    utility threads sit in their own lanes under the main band, below where they happened.
    """
    decisions = analysis.decisions if analysis else {}
    ids = [c.call_id for c in calls]
    known = set(ids)
    index = {cid: i for i, cid in enumerate(ids)}
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
        if tree_parent[cid]:
            children[tree_parent[cid]].append(cid)

    # x: one step right of whatever this call continues; unlinked roots sit under the latest
    # main call before them, so auxiliary work appears where it happened in time.
    x: dict[str, float] = {}
    last_main_x = 0.0
    for cid in ids:
        anchor = tree_parent[cid] or cross_parent[cid]
        if anchor is not None and anchor in x:
            x[cid] = x[anchor] + 1
        elif group[cid] == "main":
            x[cid] = 0.0
        else:
            x[cid] = last_main_x
        if group[cid] == "main":
            last_main_x = max(last_main_x, x[cid])

    subtree_size: dict[str, int] = {}
    for cid in reversed(ids):
        subtree_size[cid] = 1 + sum(subtree_size[c] for c in children[cid])

    def child_order(cid: str) -> list[str]:
        # The kept continuation first, so the spine of the episode is a straight line.
        def rank(c: str) -> tuple:
            d = dec[c]
            return (d is None or d.state != "kept", -subtree_size[c], index[c])

        return sorted(children[cid], key=rank)

    lane_of: dict[str, int] = {}

    def place(root: str, lanes: _Lanes, first_lane: int) -> None:
        # Depth-first, first child on its parent's lane; a later sibling takes a lane only
        # after the earlier siblings' whole subtrees are placed, so siblings stay adjacent.
        stack: list[tuple[str, int | None, int]] = [(root, first_lane, first_lane)]
        while stack:
            cid, lane, parent_lane = stack.pop()
            if lane is None:
                lane = lanes.take(x[cid], at_least=parent_lane + 1)
            lane_of[cid] = lane
            lanes.mark(lane, x[cid])
            kids = child_order(cid)
            for i in range(len(kids) - 1, -1, -1):
                stack.append((kids[i], lane if i == 0 else None, lane))

    main_lanes = _Lanes()
    roots = [cid for cid in ids if tree_parent[cid] is None]
    for r in roots:
        if group[r] == "main":
            place(r, main_lanes, main_lanes.take(x[r]))
    aux_start = max(main_lanes.count, 1) - 1 + MAIN_BAND_GAP
    aux_lanes = _Lanes()
    collapsed_lanes = _Lanes()
    thread_root: dict[str, str] = {}
    thread_size: dict[str, int] = {}
    collapsed_y: dict[str, float] = {}
    for r in roots:
        if group[r] != "main":
            place(r, aux_lanes, aux_lanes.take(x[r]))
            lane = collapsed_lanes.take(x[r])
            collapsed_lanes.mark(lane, x[r])
            collapsed_y[r] = aux_start + lane
        members = [r]
        i = 0
        while i < len(members):
            members.extend(children[members[i]])
            i += 1
        for m in members:
            thread_root[m] = r
        thread_size[r] = len(members)

    paths = {p.path_id: list(p.call_ids) for p in (analysis.paths if analysis else [])}
    path_of: dict[str, list[str]] = defaultdict(list)
    for p in analysis.paths if analysis else []:
        for cid in p.call_ids:
            path_of[cid].append(p.path_id)
    path_by_id = {p.path_id: p for p in (analysis.paths if analysis else [])}

    nodes: list[TreeNode] = []
    for c in calls:
        cid = c.call_id
        d = dec[cid]
        is_aux = group[cid] != "main"
        y = (aux_start + lane_of[cid]) if is_aux else float(lane_of[cid])
        kept_paths = [path_by_id[p] for p in path_of[cid] if path_by_id[p].state == "kept"]
        adv = reward = None
        if d is not None and d.state == "kept":
            adv = next((p.advantage for p in kept_paths if p.advantage is not None), None)
            if adv is None and analysis is not None:
                adv = analysis.advantage
            reward = next((p.reward for p in kept_paths if p.reward is not None), None)
            if reward is None and analysis is not None:
                reward = analysis.reward
        root = thread_root.get(cid, cid)
        nodes.append(
            TreeNode(
                call_id=cid,
                index=index[cid],
                x=x[cid],
                y=y,
                role=d.role if d else "?",
                state=d.state if d else "not analysed",
                reason=d.reason if d else None,
                category=node_category(d),
                thread=d.thread if d else "",
                segment=d.segment if d else None,
                is_aux=is_aux,
                thread_root=root,
                thread_size=thread_size.get(root, 1),
                y_collapsed=(collapsed_y.get(cid) if is_aux else y),
                model=c.model,
                tokens=c.generated_tokens,
                http_status=c.http_status,
                failure=c.failure,
                path_ids=path_of[cid],
                advantage=adv,
                reward=reward,
            )
        )

    edges: list[TreeEdge] = []
    for cid in ids:
        if tree_parent[cid]:
            edges.append(TreeEdge(tree_parent[cid], cid, "continues"))
        elif cross_parent[cid]:
            edges.append(TreeEdge(cross_parent[cid], cid, _cross_kind(dec[cid])))

    boundaries = sorted(
        {
            x[cid] - 0.5
            for cid in ids
            if group[cid] == "main"
            and tree_parent[cid] is None
            and cross_parent[cid] is not None
            and dec[cid] is not None
            and dec[cid].linked_call is not None
        }
    )

    leaves = [
        LeafLabel(p.path_id, p.call_ids[-1], p.reward, p.advantage, p.ppo_return)
        for p in (analysis.paths if analysis else [])
        if p.state == "kept" and p.call_ids and p.call_ids[-1] in known
    ]
    return TreeLayout(
        nodes=nodes,
        edges=edges,
        boundaries=boundaries,
        leaves=leaves,
        paths=paths,
        n_main_lanes=main_lanes.count,
        aux_band_start=aux_start,
    )


def _cross_kind(d: CallDecision | None) -> str:
    if d is None:
        return "aux"
    if d.role == "aux_subagent":
        return "subagent"
    if d.role == "aux_summary":
        return "summary"
    if d.role == "main":
        return "compaction"
    return "aux"
