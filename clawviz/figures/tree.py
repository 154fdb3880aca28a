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
    REWARD_SCALE,
)

NODE_TRACE_NAME = "calls"


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
