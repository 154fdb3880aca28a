"""The token view of one call: logprob shading and per-token PPO advantage (no Streamlit)."""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from clawviz.figures.palette import ADVANTAGE_SCALE


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
