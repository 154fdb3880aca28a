"""Episode page: a compact top row (title, previous / next, find), the client-side explorer
(tree and inspector side by side, timeline, comments; `clawviz.ui.explorer`), the episode's facts
in an expander, Export and the Workspace link, then the classic tree with one section below it
(`clawviz.ui.explorer.classic`). Layout only; the logic is `clawviz.ui.episode`. Every
selection lives in the URL (?episode=&call=&path=&compare=&section=&panel=)."""

from __future__ import annotations

import streamlit as st

from clawviz.ui import state
from clawviz.ui.episode import (
    below_explorer,
    explorer_section,
    first_main_call,
    header,
    init_selection,
    open_view,
    top,
)
from clawviz.ui.pages import run_page


def main() -> None:
    url = state.database_url()
    settings = state.current_settings()
    view = open_view(url, settings)
    if view is None:
        return
    episode_id = view.episode["episode_id"]
    top(view)
    if not view.calls:
        st.session_state[state.KEY_LAST_EPISODE] = episode_id
        header(view)
        st.warning("This episode has no recorded calls.")
        return
    default_call = first_main_call(view)
    # No URL write here: a write in the run a click started would push a second entry.
    init_selection(episode_id, [c.call_id for c in view.calls], default_call)
    explorer_section(view, url, settings, default_call)
    below_explorer(view, url, settings)


run_page(__file__, main)
