"""The Settings page's logic (`pages/settings.py` is its layout): the one settings table, and
the form that changes decision settings for this browser session."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from clawviz.settings import SETTINGS, Settings, allowed, masked_url
from clawviz.ui import data, settings_form, state


def _show(v: object) -> str:
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
