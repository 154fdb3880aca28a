"""clawviz web app: the router and shared frame (`streamlit run app.py`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from clawviz import settings as settings_table
from clawviz.settings import masked_url
from clawviz.ui import data, pages, state

HERE = Path(__file__).parent
SAMPLE_LOGS = HERE / "sample_logs"
# Shipped with the app: a Material or emoji page icon makes the browser fetch the favicon from
# the internet (fonts.gstatic.com), so offline there would be none.
FAVICON = HERE / "clawviz" / "ui" / "assets" / "favicon.png"
NO_SAMPLES_ENV = "CLAWVIZ_NO_SAMPLES"


def load_samples_if_empty() -> None:
    """On first start with an empty store, ingest the bundled sample_logs/ (and task folders)."""
    if os.environ.get(NO_SAMPLES_ENV) or not SAMPLE_LOGS.is_dir():
        return
    if data.store_counts(state.database_url())["sources"] > 0:
        return
    from clawviz.jobs import ingest_paths

    bar = st.progress(0.0, text="First start: loading the bundled sample_logs/ …")

    def progress(done: int, total: int, msg: str) -> None:
        bar.progress(min(done / total, 1.0) if total else 0.0, text=f"Loading samples: {msg}")

    try:
        with state.get_session() as session:
            report = ingest_paths(
                [SAMPLE_LOGS], session=session, settings=state.current_settings(), progress=progress
            )
    except Exception as exc:  # noqa: BLE001 - the app must still open on a broken sample folder
        bar.empty()
        st.error("Could not load the bundled sample_logs/ folder.")
        st.code(f"{type(exc).__name__}: {exc}", language=None, wrap_lines=True)
        return
    bar.empty()
    state.clear_caches()
    st.toast(f"Loaded sample_logs/: {report.n_episodes} episodes, {report.n_calls} calls")


def sidebar() -> None:
    """Store and settings facts shown on every page."""
    settings = state.current_settings()
    with st.sidebar:
        if settings_table.ENV_ERROR:
            # A bad CLAWVIZ_<NAME> variable: the CLI refuses to run; the app says so and opens
            # on the defaults rather than not at all.
            st.error(f"{settings_table.ENV_ERROR}. The app uses the default instead.")
        # Plain text, not st.code: a code box loads the front end's highlighter on every page
        # (measured: ~0.15x of a trivial page's paint, bench/README.md "fifth pass: floors").
        st.caption("Store")
        st.text(masked_url(state.database_url()))
        counts = data.store_counts(state.database_url())
        st.caption(
            f"{counts['episodes']} episodes · {counts['calls']} calls · "
            f"{counts['sources']} files · {counts['rejected']} rejected lines"
        )
        st.caption("Settings hash (decisions shown)")
        st.text(settings.settings_hash)
        overrides = st.session_state.get(state.KEY_SETTINGS_OVERRIDES) or {}
        if overrides:
            st.caption("Changed on the Settings page: " + ", ".join(sorted(overrides)))


def main() -> None:
    st.set_page_config(page_title="clawviz", page_icon=str(FAVICON), layout="wide")
    # `pages.navigation` is annotated with the function `st.navigation`, not the page it returns.
    pg = cast(StreamlitPage, pages.navigation())
    load_samples_if_empty()
    settings = state.current_settings()
    data.ensure_analysed(state.database_url(), settings.settings_hash, settings)
    sidebar()
    pg.run()


main()
