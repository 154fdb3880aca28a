"""Plotly figures of the app, one module per page (no Streamlit here).

`layout` (pure tree layout), `tree` (the Episode tree), `tokens` (the token view), `runs` (the
Runs charts), `palette` (the one palette), `explorer` (the Episode explorer's payload).

The public names below (`__all__`) are imported from their module on first use
(`clawviz._lazy`); callers outside the stage import them from `clawviz.figures`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clawviz._lazy import lazy_api

if TYPE_CHECKING:
    from clawviz.figures.explorer import build_payload
    from clawviz.figures.explorer.assets import explorer_css, explorer_js, share_html
    from clawviz.figures.explorer.pack import pack_payload
    from clawviz.figures.layout import TREE_WINDOW, TreeLayout, tree_layout
    from clawviz.figures.palette import (
        COLOUR_MODES,
        SEVERITY_COLOURS,
        VERDICT_COLOURS,
        reason_colour,
        state_colour,
    )
    from clawviz.figures.runs import (
        advantage_by_group_figure,
        drop_reasons_figure,
        reward_bins_figure,
    )
    from clawviz.figures.tokens import (
        TokenCell,
        advantage_figure,
        advantage_grid,
        logprob_colour,
        ratio_colour,
        token_cells,
        token_figure,
        token_grid,
    )
    from clawviz.figures.tree import call_from_selection, tree_figure

__all__ = [
    "COLOUR_MODES",
    "SEVERITY_COLOURS",
    "TREE_WINDOW",
    "TokenCell",
    "TreeLayout",
    "VERDICT_COLOURS",
    "advantage_by_group_figure",
    "advantage_figure",
    "advantage_grid",
    "build_payload",
    "call_from_selection",
    "drop_reasons_figure",
    "explorer_css",
    "explorer_js",
    "logprob_colour",
    "pack_payload",
    "ratio_colour",
    "reason_colour",
    "reward_bins_figure",
    "share_html",
    "state_colour",
    "token_cells",
    "token_figure",
    "token_grid",
    "tree_figure",
    "tree_layout",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "explorer": ("build_payload",),
    "explorer.assets": ("explorer_css", "explorer_js", "share_html"),
    "explorer.pack": ("pack_payload",),
    "layout": ("TREE_WINDOW", "TreeLayout", "tree_layout"),
    "palette": (
        "COLOUR_MODES",
        "SEVERITY_COLOURS",
        "VERDICT_COLOURS",
        "reason_colour",
        "state_colour",
    ),
    "runs": ("advantage_by_group_figure", "drop_reasons_figure", "reward_bins_figure"),
    "tokens": (
        "TokenCell",
        "advantage_figure",
        "advantage_grid",
        "logprob_colour",
        "ratio_colour",
        "token_cells",
        "token_figure",
        "token_grid",
    ),
    "tree": ("call_from_selection", "tree_figure"),
}
"""Which module holds each public name."""

_RENAMED: dict[str, tuple[str, str]] = {}

__getattr__, __dir__ = lazy_api(__name__, _HOMES)
