"""The token view of one call: logprob shading, token text with logprob and importance ratio, and
per-token PPO advantage (no Streamlit)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class TokenCell:
    """One generated token as the per-token view shows it."""

    index: int
    token_id: int | None
    text: str | None
    """The token's text when the log has it (never re-tokenised from the reply)."""
    logprob: float | None
    ratio: float | None
    """Truncated importance ratio `min(exp(logp_train - logp_rollout), C)`."""
    clipped: bool

    @property
    def label(self) -> str:
        """What the strip shows: the text with newlines and tabs made visible, else the id."""
        if self.text is not None:
            return self.text.replace("\n", "↵\n").replace("\t", "→\t") or "∅"
        return f"⟨{self.token_id}⟩" if self.token_id is not None else "⟨?⟩"

    @property
    def hover(self) -> str:
        parts = [f"token {self.index + 1}"]
        if self.token_id is not None:
            parts.append(f"id {self.token_id}")
        if self.text is not None:
            parts.append(repr(self.text))
        if self.logprob is not None:
            parts.append(f"logprob {self.logprob:.4f} (p {math.exp(self.logprob):.3f})")
        if self.ratio is not None:
            parts.append(f"ratio {self.ratio:.3f}" + (" clipped" if self.clipped else ""))
        return " · ".join(parts)


def _at(values: Sequence[Any] | None, i: int) -> Any:
    return values[i] if values is not None and i < len(values) else None


def token_cells(
    token_ids: Sequence[int] | None,
    texts: Sequence[str] | None,
    logprobs: Sequence[float | None] | None,
    ratios: Sequence[float] | None = None,
    clipped: Sequence[bool] | None = None,
) -> list[TokenCell]:
    """One cell per generated token from whatever the log has (ids, text, logprobs, ratios)."""
    n = max(len(x) for x in (token_ids or [], texts or [], logprobs or []))
    return [
        TokenCell(
            i,
            _at(token_ids, i),
            _at(texts, i),
            _at(logprobs, i),
            _at(ratios, i),
            bool(_at(clipped, i)),
        )
        for i in range(n)
    ]


def _mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> str:
    t = min(max(t, 0.0), 1.0)
    r, g, bl = (round(x + (y - x) * t) for x, y in zip(a, b, strict=True))
    return f"#{r:02x}{g:02x}{bl:02x}"


_WHITE = (255, 255, 255)
_SURPRISE = (240, 128, 60)
_LOW = (84, 140, 230)
_HIGH = (232, 120, 40)


def logprob_colour(logprob: float | None) -> str:
    """Background of a token by its probability: white when certain, orange when unlikely."""
    if logprob is None:
        return "#eeeeee"
    return _mix(_WHITE, _SURPRISE, 1 - math.exp(logprob))


def ratio_colour(ratio: float | None, cap: float) -> str:
    """Background by importance ratio: white at 1, blue below (trainer less likely than the
    sampler), orange above, full orange at the cap."""
    if ratio is None:
        return "#eeeeee"
    if ratio < 1:
        return _mix(_WHITE, _LOW, 1 - ratio)
    return _mix(_WHITE, _HIGH, (ratio - 1) / max(cap - 1, 1e-9))
