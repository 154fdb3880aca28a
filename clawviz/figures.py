"""Plotly figures for the app: the episode call tree and the Runs charts (no Streamlit here).

The tree is laid out by `tree_layout` (pure data, unit-tested) and drawn by `tree_figure` with ONE
scatter trace for all nodes (call id in `customdata`), so 500+ calls stay fast and a click on a
node can be mapped back to a call by `call_from_selection`.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from clawviz.types import Call, CallDecision, EpisodeAnalysis

NODE_TRACE_NAME = "calls"
MAIN_BAND_GAP = 1.5
"""Empty lanes between the main band and the auxiliary band."""

CATEGORY_COLOURS: dict[str, str] = {
    "kept": "#2ca02c",
    "pruned: superseded_retry": "#ff7f0e",
    "pruned: not_longest": "#e6c229",
    "pruned": "#c49c94",
    "failed": "#d62728",
    "aux_summary": "#17becf",
    "aux_subagent": "#9467bd",
    "aux_utility": "#9e9e9e",
    "aux_heartbeat": "#bcbd22",
    "aux_cron": "#8c564b",
    "aux_memory_flush": "#e377c2",
    "aux_non_model": "#c7c7c7",
    "unattached": "#7f7f7f",
    "not analysed": "#7f7f7f",
}
"""Colour per node category: kept / pruned(reason) / failed / auxiliary by kind."""

EDGE_STYLES: dict[str, dict[str, Any]] = {
    "continues": {"color": "#8a8a8a", "width": 1.5, "dash": "solid"},
    "subagent": {"color": "#9467bd", "width": 1.5, "dash": "dot"},
    "summary": {"color": "#17becf", "width": 1.5, "dash": "dot"},
    "compaction": {"color": "#17becf", "width": 2, "dash": "dash"},
    "aux": {"color": "#b0b0b0", "width": 1, "dash": "dot"},
}
EDGE_LABELS: dict[str, str] = {
    "continues": "continues",
    "subagent": "spawns sub-agent",
    "summary": "summarises",
    "compaction": "continues after compaction",
    "aux": "auxiliary call on",
}
NO_VALUE_COLOUR = "#d9d9d9"
ADVANTAGE_SCALE = "RdBu"
REWARD_SCALE = "RdYlGn"
COLOUR_MODES = ("state", "advantage", "reward")
MAX_BOX_POINTS = 1500
TREE_WINDOW = 60
"""Depth steps a long tree shows at once (about 15 px per call on a laptop screen)."""
"""Above this many episodes per harness the reward chart draws outliers only, not every point."""


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


def _fmt(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "—"
    return f"{v:+.2f}" if signed else f"{v:.2f}"


def _hover(n: TreeNode, collapsed_thread: bool) -> str:
    # Plotly hover labels understand a few HTML tags, so every log-derived value is escaped.
    e = html.escape
    lines = [
        f"<b>call {n.index + 1}</b> · {e(n.call_id)}",
        f"role: {e(n.role)}",
        f"state: {e(n.state)}" + (f" ({e(n.reason)})" if n.reason else ""),
        f"model: {e(n.model or '—')}",
        f"generated tokens: {n.tokens if n.tokens is not None else '—'}",
        f"http: {n.http_status if n.http_status is not None else '—'}"
        + (f" · {e(n.failure)}" if n.failure else ""),
    ]
    if n.advantage is not None or n.reward is not None:
        lines.append(f"reward {_fmt(n.reward)} · advantage {_fmt(n.advantage, True)}")
    if collapsed_thread and n.thread_size > 1:
        lines.append(f"thread of {n.thread_size} calls (collapsed)")
    return "<br>".join(lines)


def _value_colours(values: list[float | None], scale: str, lo: float, hi: float) -> list[str]:
    span = (hi - lo) or 1.0
    out = []
    for v in values:
        if v is None:
            out.append(NO_VALUE_COLOUR)
        else:
            t = min(max((v - lo) / span, 0.0), 1.0)
            out.append(sample_colorscale(scale, [t])[0])
    return out


def tree_figure(
    layout: TreeLayout,
    colour_by: str = "state",
    highlight_path: list[str] | str | None = None,
    collapse_aux: bool = False,
    selected_call: str | None = None,
    height: int | None = None,
    window: int = TREE_WINDOW,
) -> go.Figure:
    """Draw a TreeLayout: one node trace, one line trace per edge kind, legend, leaf labels.

    A tree deeper than `window` calls opens on a `window`-wide stretch around the selected call,
    with a range slider under it to move along the whole tree.
    """
    if colour_by not in COLOUR_MODES:
        raise ValueError(f"colour_by must be one of {COLOUR_MODES}, not {colour_by!r}")
    if isinstance(highlight_path, str):
        highlight_path = layout.paths.get(highlight_path)
    shown = [
        n for n in layout.nodes if not (collapse_aux and n.is_aux and n.thread_root != n.call_id)
    ]
    pos = {n.call_id: (n.x, n.y_collapsed if collapse_aux and n.is_aux else n.y) for n in shown}
    visible_root = {n.call_id: n.thread_root for n in layout.nodes}

    fig = go.Figure()
    # Shapes and annotations are collected and set once: add_vline / add_annotation re-validate
    # the whole layout on every call, which costs seconds on a 1,000-call episode.
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for b in layout.boundaries:
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": b,
                "x1": b,
                "y0": 0,
                "y1": 1,
                "line": {"color": "#9aa5a8", "dash": "dashdot", "width": 1},
            }
        )
        annotations.append(
            {
                "x": b,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "yanchor": "bottom",
                "text": "compaction",
                "showarrow": False,
                "font": {"size": 10, "color": "#5f6b6d"},
            }
        )

    if highlight_path:
        pts = [pos[c] for c in highlight_path if c in pos]
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                mode="lines",
                line={"color": "rgba(255, 200, 0, 0.55)", "width": 14},
                hoverinfo="skip",
                name="selected path",
                showlegend=True,
            )
        )

    by_kind: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for e in layout.edges:
        src = e.src if e.src in pos else visible_root.get(e.src)
        dst = e.dst if e.dst in pos else visible_root.get(e.dst)
        if src not in pos or dst not in pos or src == dst:
            continue
        xs, ys = by_kind[e.kind]
        (x0, y0), (x1, y1) = pos[src], pos[dst]
        if e.kind == "continues" and y0 != y1:
            # An elbow (fork over the first half step, then along the lane) keeps branch lanes
            # readable; links between threads stay straight so they read as jumps.
            xs.extend([x0, x0 + 0.5, x1, None])
            ys.extend([y0, y1, y1, None])
        else:
            xs.extend([x0, x1, None])
            ys.extend([y0, y1, None])
    for kind, (xs, ys) in by_kind.items():
        style = EDGE_STYLES[kind]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line=style,
                hoverinfo="skip",
                name=EDGE_LABELS[kind],
                legendgroup="edges",
                legendgrouptitle_text="links",
                showlegend=kind != "continues",
            )
        )

    if colour_by == "state":
        colours = [CATEGORY_COLOURS.get(n.category, "#7f7f7f") for n in shown]
    elif colour_by == "advantage":
        vals = [n.advantage for n in shown]
        m = max([abs(v) for v in vals if v is not None] + [1.0])
        colours = _value_colours(vals, ADVANTAGE_SCALE, -m, m)
        _add_colourbar(fig, ADVANTAGE_SCALE, -m, m, "advantage")
    else:
        colours = _value_colours([n.reward for n in shown], REWARD_SCALE, 0.0, 1.0)
        _add_colourbar(fig, REWARD_SCALE, 0.0, 1.0, "reward")

    symbols = []
    for n in shown:
        if n.state == "failed":
            symbols.append("x")
        elif collapse_aux and n.is_aux and n.thread_size > 1:
            symbols.append("square")
        elif n.is_aux:
            symbols.append("diamond")
        else:
            symbols.append("circle")
    sizes = [18 if n.call_id == selected_call else 12 for n in shown]
    line_w = [3 if n.call_id == selected_call else 0.5 for n in shown]
    fig.add_trace(
        go.Scatter(
            x=[pos[n.call_id][0] for n in shown],
            y=[pos[n.call_id][1] for n in shown],
            mode="markers",
            marker={
                "color": colours,
                "size": sizes,
                "symbol": symbols,
                "line": {"color": "#222222", "width": line_w},
            },
            customdata=[n.call_id for n in shown],
            hovertext=[_hover(n, collapse_aux) for n in shown],
            hovertemplate="%{hovertext}<extra></extra>",
            name=NODE_TRACE_NAME,
            showlegend=False,
        )
    )

    if colour_by == "state":
        present = []
        for n in shown:
            if n.category not in present:
                present.append(n.category)
        for cat in CATEGORY_COLOURS:
            if cat in present:
                fig.add_trace(
                    go.Scatter(
                        x=[None],
                        y=[None],
                        mode="markers",
                        marker={"color": CATEGORY_COLOURS[cat], "size": 10},
                        name=cat,
                        legendgroup="states",
                        legendgrouptitle_text="state",
                        hoverinfo="skip",
                    )
                )

    for leaf in layout.leaves:
        if leaf.call_id not in pos or (leaf.reward is None and leaf.advantage is None):
            continue
        lx, ly = pos[leaf.call_id]
        label = f"R {_fmt(leaf.reward)} · A {_fmt(leaf.advantage, True)}"
        annotations.append(
            {
                "x": lx,
                "y": ly,
                "text": html.escape(label),
                "showarrow": False,
                "yanchor": "bottom",
                "yshift": 9,
                "font": {"size": 11, "color": "#333333"},
                "bgcolor": "rgba(255,255,255,0.85)",
            }
        )

    max_y = max([p[1] for p in pos.values()] + [0])
    max_x = max([p[0] for p in pos.values()] + [1])
    x_range = [-0.7, max_x + 2.2]
    slider: dict[str, Any] = {"visible": False}
    if max_x > window:
        centre = pos.get(selected_call or "", (0, 0))[0]
        start = min(max(-0.7, centre - window / 4), max_x + 2.2 - window)
        x_range = [start, start + window]
        slider = {"visible": True, "thickness": 0.07, "range": [-0.7, max_x + 2.2]}
    fig.update_layout(
        shapes=shapes,
        annotations=annotations,
        height=height or _tree_height(max_y, slider["visible"]),
        margin={"l": 10, "r": 10, "t": 30, "b": 30},
        plot_bgcolor="white",
        clickmode="event+select",
        dragmode="pan",
        hovermode="closest",
        legend={
            "orientation": "v",
            "x": 1.01,
            # In value modes the colour bar takes the top right; the link legend goes below it.
            "y": 1 if colour_by == "state" else 0,
            "yanchor": "top" if colour_by == "state" else "bottom",
            "font": {"size": 11},
        },
        xaxis={
            "title": {"text": "depth (calls since the root)", "font": {"size": 11}},
            "showgrid": True,
            "gridcolor": "#f0f0f0",
            "zeroline": False,
            "range": x_range,
            # Whole depths only: a short tree would otherwise get ticks at 0.5, 1.5, ...
            "dtick": 1 if x_range[1] - x_range[0] <= 20 else None,
            "rangeslider": slider,
        },
        yaxis={
            "range": [max_y + 0.6, -0.9],
            "showgrid": False,
            "zeroline": False,
            "tickmode": "array",
            "tickvals": [0, layout.aux_band_start] if layout.aux_band_start <= max_y else [0],
            "ticktext": ["main", "auxiliary"],
        },
    )
    return fig


def _tree_height(max_lane: float, with_slider: bool) -> int:
    """Pixels for lanes 0..max_lane: 40 a lane, tighter past 12 lanes, at most 900 (+ slider)."""
    lanes = max_lane + 1
    lane_px = 40 if lanes <= 12 else 28
    return int(min(900, max(320, 110 + lane_px * lanes)) + (60 if with_slider else 0))


def _add_colourbar(fig: go.Figure, scale: str, lo: float, hi: float, title: str) -> None:
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            marker={
                "colorscale": scale,
                "cmin": lo,
                "cmax": hi,
                "color": [lo],
                "showscale": True,
                "colorbar": {
                    "title": {"text": title},
                    "thickness": 12,
                    "len": 0.55,
                    "y": 1,
                    "yanchor": "top",
                },
            },
            hoverinfo="skip",
            showlegend=False,
        )
    )


def call_from_selection(selection: Mapping[str, Any] | None) -> str | None:
    """The call id of the first selected node in a `st.plotly_chart` selection event."""
    if not selection:
        return None
    sel = selection.get("selection", selection)
    points = sel.get("points", []) if isinstance(sel, Mapping) else []
    for p in points:
        cd = p.get("customdata") if isinstance(p, Mapping) else None
        if isinstance(cd, (list, tuple)):
            cd = cd[0] if cd else None
        if isinstance(cd, str) and cd:
            return cd
    return None


# --- Runs page charts -------------------------------------------------------------------------


def drop_reasons_figure(counts: pd.DataFrame) -> go.Figure:
    """Horizontal bar of episodes per reason code."""
    fig = go.Figure(
        go.Bar(
            x=counts["episodes"],
            y=counts["reason"],
            orientation="h",
            marker_color="#ff7f0e",
            hovertemplate="%{y}: %{x} episodes<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": "Reasons (episodes per code)", "font": {"size": 14}},
        height=max(220, 60 + 26 * len(counts)),
        margin={"l": 10, "r": 10, "t": 40, "b": 30},
        yaxis={"autorange": "reversed"},
        xaxis={"title": "episodes"},
    )
    return fig


def reward_by_harness_figure(episodes: pd.DataFrame) -> go.Figure:
    """Box + points of reward per harness (episodes without reward left out)."""
    fig = go.Figure()
    df = episodes[episodes["reward"].notna()]
    for harness, part in df.groupby(df["harness"].fillna("?")):
        crowded = len(part) > MAX_BOX_POINTS
        # A crowded box draws only its outliers; per-point episode ids (a string array plotly
        # deep-copies) would cost more than the whole chart, so its hover shows the reward only.
        extra = (
            {"hovertemplate": "reward %{y:.2f}<extra></extra>"}
            if crowded
            else {
                "customdata": part["episode_id"].tolist(),
                "hovertemplate": "%{customdata}<br>reward %{y:.2f}<extra></extra>",
            }
        )
        fig.add_trace(
            go.Box(
                y=part["reward"].to_numpy(dtype=float),
                name=str(harness),
                boxpoints="outliers" if crowded else "all",
                jitter=0.4,
                pointpos=0,
                **extra,
            )
        )
    fig.update_layout(
        title={"text": "Reward per harness", "font": {"size": 14}},
        height=300,
        margin={"l": 10, "r": 10, "t": 40, "b": 30},
        showlegend=False,
        yaxis={"title": "reward", "range": [-0.05, 1.05]},
    )
    return fig


def advantage_by_group_figure(groups: pd.DataFrame, max_groups: int = 40) -> go.Figure:
    """GRPO advantage of each attempt, one column per group (task / harness)."""
    names = sorted(groups["group"].unique())
    keep = names[:max_groups]
    df = groups[groups["group"].isin(keep)].sort_values(["group", "attempt"])
    adv = df["advantage"].to_numpy(dtype=float)
    fig = go.Figure(
        go.Scatter(
            x=df["group"].tolist(),
            y=adv,
            mode="markers",
            marker={
                "size": 10,
                "color": adv,
                "colorscale": ADVANTAGE_SCALE,
                "cmid": 0,
                "line": {"width": 0.5, "color": "#333"},
            },
            customdata=df["episode_id"].tolist(),
            hovertemplate="%{customdata}<br>A = %{y:+.2f}<extra></extra>",
        )
    )
    fig.add_hline(y=0, line={"color": "#999", "width": 1})
    title = "GRPO advantage per group"
    if len(keep) < len(names):
        title += f" (first {len(keep)} of {len(names):,} groups)"
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=300,
        margin={"l": 10, "r": 10, "t": 40, "b": 30},
        yaxis={"title": "advantage"},
        xaxis={"tickangle": -30},
    )
    return fig


# --- Token view -------------------------------------------------------------------------------


@dataclass
class TokenGrid:
    """Tokens of one call arranged in rows: context (not trained) then generated (trained)."""

    z: list[list[float | None]]
    text: list[list[str]]
    n_context: int
    n_trained: int
    shown_context: int


def token_grid(
    prompt_ids: list[int] | None,
    output_ids: list[int] | None,
    logprobs: list[float] | None,
    *,
    width: int = 32,
    max_context: int = 256,
) -> TokenGrid:
    """Lay the last `max_context` prompt tokens and all output tokens out in rows of `width`."""
    prompt_ids = prompt_ids or []
    output_ids = output_ids or []
    ctx = prompt_ids[-max_context:]
    cells: list[tuple[float | None, str]] = [(None, f"ctx {t}") for t in ctx]
    for i, t in enumerate(output_ids):
        lp = logprobs[i] if logprobs and i < len(logprobs) else None
        label = f"out {t}" + (f" · logprob {lp:.3f}" if lp is not None else "")
        cells.append((lp if lp is not None else 0.0, label))
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    for start in range(0, len(cells), width):
        row = cells[start : start + width]
        row += [(None, "")] * (width - len(row))
        z.append([c[0] for c in row])
        text.append([c[1] for c in row])
    return TokenGrid(z, text, len(prompt_ids), len(output_ids), len(ctx))


def token_figure(grid: TokenGrid) -> go.Figure:
    """Heatmap of a TokenGrid: context cells grey, trained cells shaded by their logprob."""
    context = [[1.0 if t.startswith("ctx") else None for t in row] for row in grid.text]
    trained = [
        [z if t.startswith("out") else None for z, t in zip(zrow, trow, strict=True)]
        for zrow, trow in zip(grid.z, grid.text, strict=True)
    ]
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            z=context,
            text=grid.text,
            hovertemplate="%{text}<extra></extra>",
            colorscale=[[0, "#c8c8c8"], [1, "#c8c8c8"]],
            showscale=False,
            xgap=1,
            ygap=1,
        )
    )
    fig.add_trace(
        go.Heatmap(
            z=trained,
            text=grid.text,
            hovertemplate="%{text}<extra></extra>",
            colorscale="Viridis",
            zmin=-5,
            zmax=0,
            colorbar={"title": {"text": "logprob"}, "thickness": 12},
            xgap=1,
            ygap=1,
        )
    )
    fig.update_layout(
        height=max(160, 40 + 18 * len(grid.z)),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        plot_bgcolor="white",
        xaxis={"visible": False},
        yaxis={"visible": False, "autorange": "reversed"},
    )
    return fig


@dataclass
class AdvantageGrid:
    """Per generated token PPO advantages laid out in rows like a TokenGrid's."""

    z: list[list[float | None]]
    text: list[list[str]]
    n_tokens: int
    limit: float
    """Half-width of the symmetric colour range (the largest |A_t|, at least 1e-6)."""


def advantage_grid(
    output_ids: list[int] | None,
    advantages: list[float],
    values: list[float] | None,
    *,
    width: int = 32,
) -> AdvantageGrid:
    """One cell per generated token carrying `A_t = R - V(s_t)`, in rows of `width`."""
    output_ids = output_ids or []
    values = values or []
    cells: list[tuple[float | None, str]] = []
    for i, a in enumerate(advantages):
        tok = f"out {output_ids[i]}" if i < len(output_ids) else f"token {i}"
        v = f" · V {values[i]:.3f}" if i < len(values) else ""
        cells.append((a, f"{tok}{v} · A_t {a:+.3f}"))
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    for start in range(0, len(cells), width):
        row = cells[start : start + width]
        row += [(None, "")] * (width - len(row))
        z.append([c[0] for c in row])
        text.append([c[1] for c in row])
    limit = max([abs(a) for a in advantages] + [1e-6])
    return AdvantageGrid(z, text, len(advantages), limit)


def advantage_figure(grid: AdvantageGrid) -> go.Figure:
    """Heatmap of per-token PPO advantages on a diverging scale centred on 0."""
    fig = go.Figure(
        go.Heatmap(
            z=grid.z,
            text=grid.text,
            hovertemplate="%{text}<extra></extra>",
            colorscale=ADVANTAGE_SCALE,
            zmin=-grid.limit,
            zmax=grid.limit,
            colorbar={"title": {"text": "A_t"}, "thickness": 12},
            xgap=1,
            ygap=1,
        )
    )
    fig.update_layout(
        # The token view's sizing, so a row of A_t cells looks like a row of tokens above it.
        height=max(160, 40 + 18 * len(grid.z)),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        plot_bgcolor="white",
        xaxis={"visible": False},
        yaxis={"visible": False, "autorange": "reversed"},
    )
    return fig
