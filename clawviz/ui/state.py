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

from clawviz import store
from clawviz.settings import DEFAULT_SETTINGS, SETTINGS_BY_NAME, Settings

# Query parameters (deep links).
QP_EPISODE = "episode"
QP_CALL = "call"
QP_PATH = "path"
QP_COMPARE = "compare"
QP_TASK = "task"
QP_SECTION = "section"
"""The Episode page's section below the tree (`clawviz.ui.sections`)."""
QP_PANEL = "panel"
"""The call inspector's panel (`clawviz.ui.sections`)."""
QP_TREE = "tree"
"""`tree=1`: the Plotly tree of a long episode is open (drawn only then; `ui.explorer.classic`)."""
EPISODE_PARAMS = (QP_EPISODE, QP_CALL, QP_PATH, QP_COMPARE, QP_SECTION, QP_PANEL, QP_TREE)

# Session-state keys.
KEY_SETTINGS_OVERRIDES = "settings_overrides"
"""Dict of setting name -> value chosen on the Settings page for this browser session."""
KEY_EPISODE_LOADED = "episode_page_loaded"
"""Episode id the Episode page's widgets were last initialised for."""
KEY_INGEST_REPORT = "ingest_last_report"
KEY_RELOAD = "sidebar_reload"
KEY_LAST_EPISODE = "last_episode"
"""Episode id last shown on the Episode page: opening the page bare shows it again."""
KEY_RUNS_QUERY = "runs_last_query"
"""The Runs page's last filter parameters: the Episode switcher walks the same list."""

# Widget keys: Runs page.
KEY_RUNS_TABLE = "runs_episodes_table"
KEY_FILTER_TASK = "runs_filter_task"
KEY_FILTER_TASK_FIND = "runs_filter_task_find"
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
KEY_RUNS_CHARTS = "runs_charts_open"

# Widget keys: Episode page.
KEY_EPISODE_PICK = "episode_pick"
KEY_CALL_SELECT = "episode_call_select"
KEY_TREE = "episode_tree"
KEY_TREE_OPEN = "episode_tree_open"
KEY_COLOUR_BY = "episode_colour_by"
KEY_COLLAPSE_AUX = "episode_collapse_aux"
KEY_PATHS_TABLE = "episode_paths_table"
KEY_COMPARE_SELECT = "episode_compare_select"
KEY_RAW_JSON = "episode_show_raw"
KEY_SECTION = "episode_section"
KEY_PANEL = "episode_panel"

# Widget keys: Ingest and Settings pages.
KEY_UPLOAD = "ingest_upload"
KEY_INGEST_PATH = "ingest_path"
KEY_INGEST_RUN = "ingest_run"
KEY_SETTINGS_FORM = "settings_form"

NONE_OPTION = "—"


def database_url() -> str:
    """The store URL (CLAWVIZ_DATABASE_URL wins over the settings table default)."""
    return DEFAULT_SETTINGS.resolved_database_url


@st.cache_resource(show_spinner=False)
def _engine_for(url: str) -> Engine:
    return store.get_engine(url)


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


def get_param_list(name: str) -> list[str]:
    """Every value of a repeated query parameter (`?task=a&task=b`), empty ones dropped."""
    return [v for v in st.query_params.get_all(name) if v]


ParamValue = str | list[str] | tuple[str, ...] | None


def set_params(**values: ParamValue) -> bool:
    """Write query parameters as one browser history entry; None or empty removes one.

    Streamlit 1.67's frontend pushes a history entry for every query-parameter message
    (`handlePageInfoChanged`: pushState, or replaceState while it replays a Back/Forward), and
    every `st.query_params[k] = v` or `del` sends one message. So a selection change that
    touches several parameters goes out here as a single `from_dict`, and nothing is sent when
    the URL would not change (a no-op write would still push a duplicate entry). Returns
    whether the URL changed.
    """
    current = {k: st.query_params.get_all(k) for k in st.query_params}
    wanted = dict(current)
    for name, value in values.items():
        items = [value] if isinstance(value, str) else list(value or [])
        items = [str(v) for v in items if v not in (None, "")]
        if items:
            wanted[name] = items
        else:
            wanted.pop(name, None)
    if wanted == current:
        return False
    st.query_params.from_dict({k: v[0] if len(v) == 1 else v for k, v in wanted.items()})
    return True


def clear_caches() -> None:
    """Forget cached query results (after an ingest or a settings change)."""
    st.cache_data.clear()
