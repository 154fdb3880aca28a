"""Which section of the Episode page, and which panel of its call inspector, is drawn.

The Episode page's first view draws the header, the tree and ONE section below it: the call
inspector ("Call", the default), the Paths table or Compare. Inside the call inspector one panel
is drawn: the request diff against the parent (the default), the response, the tokens or the raw
JSON. Both choices live in the URL (`?section=paths`, `?panel=tokens`; the default is left out),
so a deep link opens them, a pasted link restores them and Back walks them, one history entry per
pick (`clawviz.ui.state.set_params`). Only what is chosen is rendered, so the browser lays out one
section instead of all of them.

An old link that names `?compare=` and no `section` opens Compare, as the page it was copied from
showed the comparison below the tree.
"""

from __future__ import annotations

import streamlit as st

from clawviz.ui import state

SECTION_CALL = "call"
SECTION_PATHS = "paths"
SECTION_COMPARE = "compare"
SECTIONS = {SECTION_CALL: "Call", SECTION_PATHS: "Paths", SECTION_COMPARE: "Compare"}
"""URL value -> the control's label, in the control's order."""

PANEL_REQUEST = "request"
PANEL_RESPONSE = "response"
PANEL_TOKENS = "tokens"
PANEL_RAW = "raw"
PANELS = {
    PANEL_REQUEST: "Request (vs parent)",
    PANEL_RESPONSE: "Response",
    PANEL_TOKENS: "Tokens",
    PANEL_RAW: "Raw JSON",
}
DEFAULT_PANEL = PANEL_REQUEST


def implied_section(compare: str | None) -> str:
    """The section a URL without `section=` shows: Compare when it names an episode to compare
    with (links written before sections existed), else the call inspector."""
    return SECTION_COMPARE if compare else SECTION_CALL


def current_section() -> str:
    """The section the URL names (an unknown value: the implied one)."""
    wanted = state.get_param(state.QP_SECTION)
    if wanted in SECTIONS:
        return wanted
    return implied_section(state.get_param(state.QP_COMPARE))


def current_panel() -> str:
    wanted = state.get_param(state.QP_PANEL)
    return wanted if wanted in PANELS else DEFAULT_PANEL


def section_value(section: str, compare: str | None) -> str | None:
    """What to write as `section=` so the URL shows `section`, given the `compare=` it will
    hold: nothing when that is what a URL without it shows."""
    return None if section == implied_section(compare) else section


def show_call_params(call_id: str) -> dict[str, str | None]:
    """The parameters that inspect `call_id` in the Call section (for one `set_params`)."""
    return {
        state.QP_CALL: call_id,
        state.QP_SECTION: section_value(SECTION_CALL, state.get_param(state.QP_COMPARE)),
    }


def seed() -> None:
    """Set both controls from the URL before they are drawn (the URL is the truth, so Back and
    a pasted link restore them)."""
    st.session_state[state.KEY_SECTION] = current_section()
    st.session_state[state.KEY_PANEL] = current_panel()


def on_section_pick() -> None:
    picked = st.session_state.get(state.KEY_SECTION)
    if picked not in SECTIONS:
        # A click on the chosen segment unselects it: keep showing what the URL names.
        st.session_state[state.KEY_SECTION] = current_section()
        return
    state.set_params(section=section_value(picked, state.get_param(state.QP_COMPARE)))


def on_panel_pick() -> None:
    picked = st.session_state.get(state.KEY_PANEL)
    if picked not in PANELS:
        st.session_state[state.KEY_PANEL] = current_panel()
        return
    state.set_params(panel=None if picked == DEFAULT_PANEL else picked)


def section_control() -> str:
    """The section picker under the tree; returns the section to draw."""
    st.segmented_control(
        "Below the tree",
        list(SECTIONS),
        format_func=SECTIONS.__getitem__,
        key=state.KEY_SECTION,
        on_change=on_section_pick,
        help="Call: the selected call's inspector. Paths: every root-to-leaf path with its "
        "reward and advantage. Compare: this episode beside another one.",
    )
    return current_section()


def panel_control() -> str:
    """The panel picker of the call inspector; returns the panel to draw."""
    st.segmented_control(
        "Show",
        list(PANELS),
        format_func=PANELS.__getitem__,
        key=state.KEY_PANEL,
        on_change=on_panel_pick,
        label_visibility="collapsed",
    )
    return current_panel()
