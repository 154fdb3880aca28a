"""Settings page: the one settings table, and decision settings editable for this session.

Layout only; the table and the form are `clawviz.ui.settings`.
"""

from __future__ import annotations

import streamlit as st

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.ui import access, state
from clawviz.ui.pages import run_page
from clawviz.ui.settings import edit_form, settings_table


def main() -> None:
    st.title("Settings")
    cur = state.current_settings()
    st.markdown(
        f"Decisions on every page are computed under settings hash `{cur.settings_hash}`"
        + (" (defaults)." if cur.settings_hash == DEFAULT_SETTINGS.settings_hash else ".")
    )
    st.caption(
        "Changes apply to this browser session only; decisions for each settings hash are "
        "computed once and kept in the store. The CLI takes the same names: "
        "`python3 -m clawviz COMMAND --set name=value`."
    )
    if not access.blocked("Changing settings"):
        edit_form()
    settings_table()


run_page(__file__, main)
