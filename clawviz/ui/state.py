"""Engine, session, settings and URL state shared by every page.

Widget and session-state keys are named here so pages, callbacks and AppTest agree on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from clawviz.settings import DEFAULT_SETTINGS, SETTINGS_BY_NAME, Settings
from clawviz.store import db

# Query parameters (deep links).
QP_EPISODE = "episode"
QP_CALL = "call"
QP_PATH = "path"
QP_COMPARE = "compare"
QP_TASK = "task"
EPISODE_PARAMS = (QP_EPISODE, QP_CALL, QP_PATH, QP_COMPARE)

# Session-state keys.
KEY_SETTINGS_OVERRIDES = "settings_overrides"
"""Dict of setting name -> value chosen on the Settings page for this browser session."""
KEY_EPISODE_LOADED = "episode_page_loaded"
"""Episode id the Episode page's widgets were last initialised for."""
KEY_INGEST_REPORT = "ingest_last_report"
KEY_RELOAD = "sidebar_reload"
KEY_FRAME_REDIRECTED = "frame_redirected"
"""Set once a page run directly by Streamlit's legacy pages/ mode was re-run through app.py."""

# Widget keys: Runs page.
KEY_RUNS_TABLE = "runs_episodes_table"
KEY_FILTER_TASK = "runs_filter_task"
KEY_FILTER_HARNESS = "runs_filter_harness"
KEY_FILTER_MODEL = "runs_filter_model"
KEY_FILTER_STATUS = "runs_filter_status"
KEY_FILTER_REASON = "runs_filter_reason"
KEY_FILTER_REWARD = "runs_filter_reward"
KEY_FILTER_NO_REWARD = "runs_filter_no_reward"
KEY_SEARCH_TEXT = "runs_search_text"
KEY_SEARCH_ROLE = "runs_search_role"
KEY_SEARCH_SYNTAX = "runs_search_syntax"
KEY_SEARCH_TABLE = "runs_search_table"
KEY_RUNS_STATS = "runs_compute_stats"

# Widget keys: Episode page.
KEY_EPISODE_PICK = "episode_pick"
KEY_CALL_SELECT = "episode_call_select"
KEY_TREE = "episode_tree"
KEY_COLOUR_BY = "episode_colour_by"
KEY_COLLAPSE_AUX = "episode_collapse_aux"
KEY_PATHS_TABLE = "episode_paths_table"
KEY_COMPARE_SELECT = "episode_compare_select"
KEY_RAW_JSON = "episode_show_raw"

# Widget keys: Ingest and Settings pages.
KEY_UPLOAD = "ingest_upload"
KEY_INGEST_PATH = "ingest_path"
KEY_INGEST_RUN = "ingest_run"
KEY_SETTINGS_FORM = "settings_form"

NONE_OPTION = "—"


def require_app_frame() -> None:
    """Re-run through app.py when Streamlit ran a page file directly (legacy pages/ mode).

    Streamlit 1.67 treats an app with a `pages/` folder as a legacy multipage app until app.py
    first calls st.navigation; a deep link opened first on a fresh server would otherwise show
    its page without the app frame (menu, sidebar, settings, analysis).
    """
    from streamlit.runtime.pages_manager import PagesManager

    if not PagesManager.uses_pages_directory:
        return
    PagesManager.uses_pages_directory = False
    # Once per session: AppTest resets the flag before every run, and a rerun there would
    # swallow the widget event that triggered the run.
    if not st.session_state.get(KEY_FRAME_REDIRECTED):
        st.session_state[KEY_FRAME_REDIRECTED] = True
        st.rerun()


def database_url() -> str:
    """The store URL (CLAWVIZ_DATABASE_URL wins over the settings table default)."""
    return DEFAULT_SETTINGS.resolved_database_url


@st.cache_resource(show_spinner=False)
def _engine_for(url: str) -> Engine:
    return db.get_engine(url)


def get_engine() -> Engine:
    """The cached engine of the current store."""
    return _engine_for(database_url())


@contextmanager
def get_session() -> Iterator[Session]:
    """A session on the current store, closed after use."""
    with Session(get_engine()) as s:
        yield s


def current_settings() -> Settings:
    """Defaults overridden by what the Settings page chose in this browser session."""
    overrides = st.session_state.get(KEY_SETTINGS_OVERRIDES) or {}
    valid = {k: v for k, v in overrides.items() if k in SETTINGS_BY_NAME}
    return DEFAULT_SETTINGS.with_(**valid)


def set_settings_overrides(overrides: dict[str, Any]) -> None:
    """Store the Settings page's choices (only values that differ from the defaults)."""
    st.session_state[KEY_SETTINGS_OVERRIDES] = {
        k: v for k, v in overrides.items() if SETTINGS_BY_NAME[k].default != v
    }


def get_param(name: str) -> str | None:
    """A query parameter, or None when absent or empty."""
    value = st.query_params.get(name)
    return value or None


def set_params(**values: str | None) -> None:
    """Write query parameters; a None value removes the parameter."""
    for name, value in values.items():
        if value is None or value == "":
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get(name) != value:
            st.query_params[name] = value


def clear_caches() -> None:
    """Forget cached query results (after an ingest or a settings change)."""
    st.cache_data.clear()
