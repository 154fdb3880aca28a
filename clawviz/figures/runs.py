"""The Runs page charts: drop reasons, reward per harness, GRPO advantage per group."""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from clawviz.figures.palette import ADVANTAGE_SCALE


def label(value: object) -> str:
    """Log text (a harness name, an episode id) fit for a Plotly label: Plotly renders a subset
    of HTML in labels and hovers (<b>, <a href>, <span style>), so < > & are entities."""
    return html.escape(str(value), quote=False)


MAX_BOX_POINTS = 1500
"""Above this many episodes per harness the reward chart draws outliers only, not every point."""


def drop_reasons_figure(counts: pd.DataFrame) -> go.Figure:
    """Horizontal bar of episodes per reason code."""
    fig = go.Figure(
        go.Bar(
            x=counts["episodes"],
            y=[label(r) for r in counts["reason"]],
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
                "customdata": [label(e) for e in part["episode_id"]],
                "hovertemplate": "%{customdata}<br>reward %{y:.2f}<extra></extra>",
            }
        )
        fig.add_trace(
            go.Box(
                y=part["reward"].to_numpy(dtype=float),
                name=label(harness),
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


def reward_bins_figure(bins: pd.DataFrame) -> go.Figure:
    """Episodes per reward bin, one bar series per harness (`queries.reward_bins`: counted by
    SQL, so the chart costs the same at 1,000 and 100,000 episodes)."""
    fig = go.Figure()
    width = 1.0 / max(int(bins["bin"].max()) + 1, 20) if len(bins) else 0.05
    for harness, part in bins.groupby("harness"):
        fig.add_trace(
            go.Bar(
                x=(part["lo"] + width / 2).to_numpy(dtype=float),
                y=part["episodes"].to_numpy(dtype=int),
                width=width * 0.9,
                name=label(harness),
                customdata=part["lo"].to_numpy(dtype=float),
                hovertemplate="reward from %{customdata:.2f}<br>%{y} episodes"
                "<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_layout(
        title={"text": "Reward per harness (episodes per 0.05)", "font": {"size": 14}},
        height=300,
        margin={"l": 10, "r": 10, "t": 40, "b": 30},
        barmode="overlay",
        legend={"orientation": "h", "y": -0.2},
        xaxis={"title": "reward", "range": [-0.02, 1.02]},
        yaxis={"title": "episodes"},
    )
    fig.update_traces(opacity=0.7)
    return fig


def advantage_by_group_figure(
    groups: pd.DataFrame, max_groups: int = 40, n_groups: int | None = None
) -> go.Figure:
    """GRPO advantage of each attempt, one column per group (task / harness).

    `n_groups`: how many groups there are when `groups` holds only the first ones (the Runs
    page reads just those from SQL); by default, the groups in `groups`."""
    names = sorted(groups["group"].unique())
    keep = names[:max_groups]
    df = groups[groups["group"].isin(keep)].sort_values(["group", "attempt"])
    adv = df["advantage"].to_numpy(dtype=float)
    fig = go.Figure(
        go.Scatter(
            x=[label(g) for g in df["group"]],
            y=adv,
            mode="markers",
            marker={
                "size": 10,
                "color": adv,
                "colorscale": ADVANTAGE_SCALE,
                "cmid": 0,
                "line": {"width": 0.5, "color": "#333"},
            },
            customdata=[label(e) for e in df["episode_id"]],
            hovertemplate="%{customdata}<br>A = %{y:+.2f}<extra></extra>",
        )
    )
    fig.add_hline(y=0, line={"color": "#999", "width": 1})
    title = "GRPO advantage per group"
    total = max(n_groups or 0, len(names))
    if len(keep) < total:
        title += f" (first {len(keep)} of {total:,} groups)"
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=300,
        margin={"l": 10, "r": 10, "t": 40, "b": 30},
        yaxis={"title": "advantage"},
        xaxis={"tickangle": -30},
    )
    return fig


# --- Token view -------------------------------------------------------------------------------
