"""One palette for every figure and badge: node categories, edge styles, reason badges, scales.

Keys are the vocabulary of `clawviz.types` (`State`, `Role`, `ReasonCode`); a StrEnum member
equals its string, so lookups by stored strings work too.
"""

from __future__ import annotations

from typing import Any, Literal

from clawviz.types import ReasonCode, Role, State

BadgeColour = Literal["red", "orange", "yellow", "blue", "green", "violet", "gray", "primary"]
"""The colours a Streamlit badge takes."""

PRUNED_PREFIX = "pruned: "
"""Category of a pruned call with a reason: `pruned: <reason>`."""
KEPT_IN_DROPPED = "kept path, episode dropped"
"""Category of a kept call of a dropped episode: drawn grey, never the bright kept green."""

CATEGORY_COLOURS: dict[str, str] = {
    State.KEPT: "#2ca02c",
    KEPT_IN_DROPPED: "#b7c4b7",
    PRUNED_PREFIX + ReasonCode.SUPERSEDED_RETRY: "#ff7f0e",
    PRUNED_PREFIX + ReasonCode.NOT_LONGEST: "#e6c229",
    State.PRUNED: "#c49c94",
    State.FAILED: "#d62728",
    Role.AUX_SUMMARY: "#17becf",
    Role.AUX_SUBAGENT: "#9467bd",
    Role.AUX_UTILITY: "#9e9e9e",
    Role.AUX_HEARTBEAT: "#bcbd22",
    Role.AUX_CRON: "#8c564b",
    Role.AUX_MEMORY_FLUSH: "#e377c2",
    Role.AUX_NON_MODEL: "#c7c7c7",
    "unattached": "#7f7f7f",
    "not analysed": "#7f7f7f",
}
"""Colour per node category: kept / pruned(reason) / failed / auxiliary by kind."""

STATE_BADGE_COLOURS: dict[str, BadgeColour] = {
    State.KEPT: "green",
    State.PRUNED: "orange",
    State.FAILED: "red",
}
"""Streamlit badge colour of a call's state (anything else: blue)."""

REASON_COLOURS: dict[str, BadgeColour] = {
    ReasonCode.TOO_MANY_BRANCHES: "red",
    ReasonCode.ENDED_IN_ERROR: "red",
    ReasonCode.UNSUPPORTED_TOOL: "orange",
    ReasonCode.MISSING_REWARD: "gray",
    ReasonCode.BELOW_REWARD_THRESHOLD: "orange",
    ReasonCode.ORPHANED_REQUEST: "red",
}
"""Streamlit badge colour of an episode reason (anything else: violet)."""


SEVERITY_COLOURS: dict[str, BadgeColour] = {"high": "red", "medium": "orange", "low": "gray"}
"""Badge colour of a diagnosis finding's severity (anything else: gray)."""

VERDICT_COLOURS: dict[str, BadgeColour] = {"valid": "green", "not valid": "gray"}
"""Badge colour of a finding's verdict label (open: blue)."""


def reason_colour(code: str) -> BadgeColour:
    """Badge colour of an episode reason code."""
    return REASON_COLOURS.get(code, "violet")


def state_colour(state: str) -> BadgeColour:
    """Badge colour of a call state."""
    return STATE_BADGE_COLOURS.get(state, "blue")


EDGE_STYLES: dict[str, dict[str, Any]] = {
    "continues": {"color": "#8a8a8a", "width": 1.5, "dash": "solid"},
    "subagent": {"color": "#9467bd", "width": 1.5, "dash": "dot"},
    "summary": {"color": "#17becf", "width": 1.5, "dash": "dot"},
    "compaction": {"color": "#17becf", "width": 2, "dash": "dash"},
    "aux": {"color": "#b0b0b0", "width": 1, "dash": "dot"},
    "retry": {"color": "#e8590c", "width": 2.5, "dash": "dash"},
}
EDGE_LABELS: dict[str, str] = {
    "continues": "continues",
    "subagent": "spawns sub-agent",
    "summary": "summarises",
    "compaction": "continues after compaction",
    "aux": "auxiliary call on",
    "retry": "retried by (failed or replaced call → its retry)",
}
PIN_COLOUR = "#c92a2a"
"""Outline of a node an episode reason is pinned on, and the border of its pinned label."""
PIN_FILL = "rgba(255, 236, 236, 0.95)"
NO_VALUE_COLOUR = "#d9d9d9"
ADVANTAGE_SCALE = "RdBu"
REWARD_SCALE = "RdYlGn"
COLOUR_MODES = ("state", "advantage", "reward")
