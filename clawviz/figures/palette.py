"""One palette for every figure and badge: node categories, edge styles, colour scales."""

from __future__ import annotations

from typing import Any

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
TREE_WINDOW = 60
