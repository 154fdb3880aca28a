"""The episode call tree as a Plotly figure (no Streamlit here).

The tree is laid out by `clawviz.figures.layout.tree_layout` (pure data, unit-tested) and drawn
by `tree_figure` with ONE scatter trace for all nodes (call id in `customdata`), so 500+ calls stay
fast and a click on a node can be mapped back to a call by `call_from_selection`.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from clawviz.figures.layout import TREE_WINDOW, TreeLayout, TreeNode
from clawviz.figures.palette import (
    ADVANTAGE_SCALE,
    CATEGORY_COLOURS,
    COLOUR_MODES,
    EDGE_LABELS,
    EDGE_STYLES,
    NO_VALUE_COLOUR,
    PIN_COLOUR,
    PIN_FILL,
    REWARD_SCALE,
)
from clawviz.types import State

NODE_TRACE_NAME = "calls"
NODE_TEXT_LIMIT = 400
"""Call numbers are written on the nodes of trees up to this many shown calls (hover beyond)."""
PIN_TEXT_CHARS = 90
"""A pinned reason label is cut to this many characters (the header and inspector say it all)."""


def _fmt(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "—"
    return f"{v:+.2f}" if signed else f"{v:.2f}"


def _hover(n: TreeNode, collapsed_thread: bool) -> str:
    # Plotly hover labels understand a few HTML tags, so every log-derived value is escaped.
    e = html.escape
    where = f"{n.source_file.rsplit('/', 1)[-1]} line {n.label}"
    lines = [
        f"<b>call {e(n.label)}</b> · {e(where)}" + (f" · seq {n.seq}" if n.seq is not None else ""),
        f"id: {e(n.call_id)}",
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
    if n.note:
        lines.append(e(_cut(n.note, 140)))
    for code, evidence in n.pins:
        lines.append(f"<b>⚑ {e(code)}</b>: {e(_cut(evidence, 140))}")
    if n.concerns:
        lines.append("one of the calls of: " + e(", ".join(n.concerns)))
    return "<br>".join(lines)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


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


Pos = dict[str, tuple[float, float]]


def _shown_y(n: TreeNode, collapse_aux: bool) -> float:
    """A node's lane: its thread's collapsed row when auxiliary threads are collapsed."""
    if collapse_aux and n.is_aux and n.y_collapsed is not None:
        return n.y_collapsed
    return n.y


def _boundary_decor(boundaries: list[float]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A dash-dot vertical line and a `compaction` label at each compaction boundary."""
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for b in boundaries:
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
    return shapes, annotations


def _highlight_trace(path: list[str], pos: Pos) -> go.Scatter:
    """A wide translucent band under the selected path."""
    pts = [pos[c] for c in path if c in pos]
    return go.Scatter(
        x=[p[0] for p in pts],
        y=[p[1] for p in pts],
        mode="lines",
        line={"color": "rgba(255, 200, 0, 0.55)", "width": 14},
        hoverinfo="skip",
        name="selected path",
        showlegend=True,
    )


def _edge_points(layout: TreeLayout, pos: Pos) -> dict[str, tuple[list, list]]:
    """Line coordinates per edge kind (None-separated); edges into collapsed threads go to the
    thread's shown root."""
    visible_root = {n.call_id: n.thread_root for n in layout.nodes}
    by_kind: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for e in layout.edges:
        src = e.src if e.src in pos else visible_root.get(e.src)
        dst = e.dst if e.dst in pos else visible_root.get(e.dst)
        if src not in pos or dst not in pos or src == dst:
            continue
        xs, ys = by_kind[e.kind]
        (x0, y0), (x1, y1) = pos[src], pos[dst]
        if e.kind == "retry":
            # A bow to the right of the two siblings: never on top of a continues link, and
            # clear of the call numbers written above the nodes.
            xs.extend([x0, x0 + 0.3, x1, None])
            ys.extend([y0, (y0 + y1) / 2, y1, None])
        elif e.kind == "continues" and y0 != y1:
            # An elbow (fork over the first half step, then along the lane) keeps branch lanes
            # readable; links between threads stay straight so they read as jumps.
            xs.extend([x0, x0 + 0.5, x1, None])
            ys.extend([y0, y1, y1, None])
        else:
            xs.extend([x0, x1, None])
            ys.extend([y0, y1, None])
    return by_kind


def _edge_traces(layout: TreeLayout, pos: Pos) -> list[go.Scatter]:
    return [
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line=EDGE_STYLES[kind],
            hoverinfo="skip",
            name=EDGE_LABELS[kind],
            legendgroup="edges",
            legendgrouptitle_text="links",
            showlegend=kind != "continues",
        )
        for kind, (xs, ys) in _edge_points(layout, pos).items()
    ]


def _node_colours(fig: go.Figure, shown: list[TreeNode], colour_by: str) -> list[str]:
    """Marker colours by state category or by a value scale (which also adds its colour bar)."""
    if colour_by == "state":
        return [CATEGORY_COLOURS.get(n.category, "#7f7f7f") for n in shown]
    if colour_by == "advantage":
        vals = [n.advantage for n in shown]
        m = max([abs(v) for v in vals if v is not None] + [1.0])
        _add_colourbar(fig, ADVANTAGE_SCALE, -m, m, "advantage")
        return _value_colours(vals, ADVANTAGE_SCALE, -m, m)
    _add_colourbar(fig, REWARD_SCALE, 0.0, 1.0, "reward")
    return _value_colours([n.reward for n in shown], REWARD_SCALE, 0.0, 1.0)


def _symbol(n: TreeNode, collapse_aux: bool) -> str:
    if n.state == State.FAILED:
        return "x"
    if collapse_aux and n.is_aux and n.thread_size > 1:
        return "square"
    return "diamond" if n.is_aux else "circle"


def _node_trace(
    shown: list[TreeNode],
    pos: Pos,
    colours: list[str],
    collapse_aux: bool,
    selected_call: str | None,
) -> go.Scatter:
    """ONE marker trace for every shown call, the call id in `customdata`, its number
    (`call_label`) written above it; nodes an episode reason is pinned on are ringed red."""

    def size(n: TreeNode) -> int:
        return 18 if n.call_id == selected_call else 15 if n.pins else 12

    def outline(n: TreeNode) -> tuple[str, float]:
        if n.call_id == selected_call:
            return "#222222", 3
        if n.pins or n.concerns:
            return PIN_COLOUR, 2.5
        return "#222222", 0.5

    lines = [outline(n) for n in shown]
    with_text = len(shown) <= NODE_TEXT_LIMIT
    return go.Scatter(
        x=[pos[n.call_id][0] for n in shown],
        y=[pos[n.call_id][1] for n in shown],
        mode="markers+text" if with_text else "markers",
        text=[n.label for n in shown] if with_text else None,
        textposition="top center",
        textfont={"size": 10, "color": "#3d3d3d"},
        marker={
            "color": colours,
            "size": [size(n) for n in shown],
            "symbol": [_symbol(n, collapse_aux) for n in shown],
            "line": {"color": [c for c, _ in lines], "width": [w for _, w in lines]},
        },
        customdata=[n.call_id for n in shown],
        hovertext=[_hover(n, collapse_aux) for n in shown],
        hovertemplate="%{hovertext}<extra></extra>",
        name=NODE_TRACE_NAME,
        showlegend=False,
    )


def _legend_traces(shown: list[TreeNode]) -> list[go.Scatter]:
    """One legend entry per state category present, in palette order."""
    present = {n.category for n in shown}
    return [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            marker={"color": colour, "size": 10},
            name=cat,
            legendgroup="states",
            legendgrouptitle_text="state",
            hoverinfo="skip",
        )
        for cat, colour in CATEGORY_COLOURS.items()
        if cat in present
    ]


def _pin_legend() -> go.Scatter:
    return go.Scatter(
        x=[None],
        y=[None],
        mode="markers",
        marker={"color": "white", "size": 11, "line": {"color": PIN_COLOUR, "width": 2.5}},
        name="⚑ episode reason pinned here",
        legendgroup="states",
        hoverinfo="skip",
    )


def _pin_annotations(layout: TreeLayout, pos: Pos, mid_x: float) -> list[dict[str, Any]]:
    """Each episode reason as a label with an arrow to the call that caused it (stacked when
    one call carries several). A call right of `mid_x` (the middle of the shown depths) gets its
    label on its left, so the label stays inside the plot instead of running under the legend."""
    out = []
    per_call: dict[str, int] = defaultdict(int)
    for i, pin in enumerate(layout.pins):
        if pin.call_id not in pos:
            continue
        k = per_call[pin.call_id]
        per_call[pin.call_id] += 1
        x, y = pos[pin.call_id]
        evidence = html.escape(_cut(pin.evidence, PIN_TEXT_CHARS))
        text = f"<b>⚑ {html.escape(pin.code)}</b>: {evidence}"
        out.append(
            {
                "x": x,
                "y": y,
                "text": text,
                "showarrow": True,
                "arrowhead": 2,
                "arrowcolor": PIN_COLOUR,
                "arrowwidth": 1.5,
                # Above the node, further up for each further reason on the same call; a lane
                # that is not the top one points from below (the row above may be busy).
                "ax": (24 + 10 * (i % 2)) * (-1 if x > mid_x else 1),
                "ay": (-42 - 30 * k) if y <= 0 else (40 + 30 * k),
                "xanchor": "right" if x > mid_x else "left",
                "font": {"size": 11, "color": "#7a1212"},
                "bgcolor": PIN_FILL,
                "bordercolor": PIN_COLOUR,
                "borderwidth": 1,
                "borderpad": 3,
            }
        )
    return out


def _leaf_annotations(layout: TreeLayout, pos: Pos) -> list[dict[str, Any]]:
    """`R … · A …` next to the last call of each kept path that has a value."""
    out = []
    # Right of the leaf when nothing leaves it (the call number sits above it), else under it.
    sources = {e.src for e in layout.edges}
    for leaf in layout.leaves:
        if leaf.call_id not in pos or (leaf.reward is None and leaf.advantage is None):
            continue
        lx, ly = pos[leaf.call_id]
        label = f"R {_fmt(leaf.reward)} · A {_fmt(leaf.advantage, True)}"
        place = (
            {"yanchor": "top", "yshift": -9}
            if leaf.call_id in sources
            else {"xanchor": "left", "xshift": 10}
        )
        out.append(
            {
                "x": lx,
                "y": ly,
                "text": html.escape(label),
                "showarrow": False,
                **place,
                "font": {"size": 11, "color": "#333333"},
                "bgcolor": "rgba(255,255,255,0.85)",
            }
        )
    return out


def x_window(max_x: float, window: int, centre: float) -> tuple[list[float], dict[str, Any]]:
    """x range and range slider: the whole tree, or a `window`-wide stretch around `centre`."""
    x_range = [-0.7, max_x + 2.2]
    slider: dict[str, Any] = {"visible": False}
    if max_x > window:
        start = min(max(-0.7, centre - window / 4), max_x + 2.2 - window)
        x_range = [start, start + window]
        slider = {"visible": True, "thickness": 0.07, "range": [-0.7, max_x + 2.2]}
    return x_range, slider


def _axes(
    layout: TreeLayout, max_y: float, x_range: list[float], slider: dict[str, Any]
) -> dict[str, Any]:
    return {
        "xaxis": {
            "title": {"text": "depth (calls since the root)", "font": {"size": 11}},
            "showgrid": True,
            "gridcolor": "#f0f0f0",
            "zeroline": False,
            "range": x_range,
            # Whole depths only: a short tree would otherwise get ticks at 0.5, 1.5, ...
            "dtick": 1 if x_range[1] - x_range[0] <= 20 else None,
            "rangeslider": slider,
        },
        "yaxis": {
            "range": [max_y + 0.6, -0.9],
            "showgrid": False,
            "zeroline": False,
            "tickmode": "array",
            "tickvals": [0, layout.aux_band_start] if layout.aux_band_start <= max_y else [0],
            "ticktext": ["main", "auxiliary"],
        },
    }


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
    pos: Pos = {n.call_id: (n.x, _shown_y(n, collapse_aux)) for n in shown}

    fig = go.Figure()
    # Shapes and annotations are collected and set once: add_vline / add_annotation re-validate
    # the whole layout on every call, which costs seconds on a 1,000-call episode.
    shapes, annotations = _boundary_decor(layout.boundaries)
    if highlight_path:
        fig.add_trace(_highlight_trace(highlight_path, pos))
    for trace in _edge_traces(layout, pos):
        fig.add_trace(trace)
    colours = _node_colours(fig, shown, colour_by)
    fig.add_trace(_node_trace(shown, pos, colours, collapse_aux, selected_call))
    if colour_by == "state":
        for trace in _legend_traces(shown):
            fig.add_trace(trace)
    if layout.pins:
        fig.add_trace(_pin_legend())
    max_y = max([p[1] for p in pos.values()] + [0])
    max_x = max([p[0] for p in pos.values()] + [1])
    x_range, slider = x_window(max_x, window, pos.get(selected_call or "", (0, 0))[0])
    annotations.extend(_leaf_annotations(layout, pos))
    annotations.extend(_pin_annotations(layout, pos, (x_range[0] + x_range[1]) / 2))
    if layout.dropped:
        annotations.append(_dropped_banner())
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
        **_axes(layout, max_y, x_range, slider),
    )
    return fig


def _dropped_banner() -> dict[str, Any]:
    return {
        "x": 0,
        "xref": "paper",
        "y": 1,
        "yref": "paper",
        "yanchor": "bottom",
        "xanchor": "left",
        "text": "<b>episode dropped</b>: its kept path is greyed, the reasons are pinned (⚑) "
        "on the calls that caused them",
        "showarrow": False,
        "font": {"size": 11, "color": PIN_COLOUR},
    }


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
