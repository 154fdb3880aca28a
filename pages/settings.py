"""Settings page: the one settings table, and decision settings editable for this session."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from clawviz.settings import DEFAULT_SETTINGS, SETTINGS, Settings, allowed, masked_url
from clawviz.ui import access, data, settings_form, state
from clawviz.ui.pages import run_page


def _show(v) -> str:
    if isinstance(v, (list, tuple, set, frozenset)):
        return ", ".join(str(x) for x in v) or "(none)"
    return "(none)" if v is None else str(v)


def settings_table() -> None:
    current = state.current_settings()
    rows = [
        {
            "name": s.name,
            "help": s.help,
            "current": _show(
                masked_url(state.database_url())
                if s.name == "database_url"
                else getattr(current, s.name)
            ),
            "default": _show(s.default),
            "allowed": allowed(s),
            "changes decisions": s.affects_decisions,
        }
        for s in SETTINGS
    ]
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="settings_table",
        height=38 + 35 * len(rows),
        column_config={"help": st.column_config.TextColumn(width="large")},
    )


def edit_form() -> None:
    """The form derived from the settings fields; Apply recomputes decisions for the new hash."""
    new = settings_form.edit_form(state.current_settings(), state.KEY_SETTINGS_FORM)
    if new is False:
        state.set_settings_overrides({})
        st.rerun()
    if isinstance(new, Settings):
        state.set_settings_overrides(new.overrides())
        # Decisions are stored per settings hash, so switching back to a hash seen before is free.
        data.ensure_analysed(state.database_url(), new.settings_hash, new)
        st.rerun()


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
