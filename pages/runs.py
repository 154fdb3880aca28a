"""Runs page: every episode with its verdict, filters, charts, dataset statistics, sources.

A layout only: the logic (SQL pages and aggregates, the fragment, the one-click row) is in
`clawviz.ui.runs`.
"""

from __future__ import annotations

import streamlit as st

from clawviz import store
from clawviz.ui import data, live, runs, state
from clawviz.ui.pages import run_page


def empty_store(url: str) -> None:
    """What an empty store shows: how to fill it, and the (empty) sources."""
    st.info(
        "The store is empty. Load proxy logs, results and task folders on the Ingest page "
        "(or restart the app without CLAWVIZ_NO_SAMPLES to load the bundled samples)."
    )
    runs.sources_section(url)


def main() -> None:
    runs.header()
    url = state.database_url()
    settings = state.current_settings()
    live.indicator(url)
    everything = data.runs_summary(url, settings.settings_hash, data.runs_view_key(
        store.RunsQuery(page_size=store.RUNS_PAGE_SIZE)
    ))  # fmt: skip
    if everything.episodes == 0:
        empty_store(url)
        return
    runs.metrics(everything)
    runs.table_view(url, settings, everything.episodes)
    runs.stats_section(url, settings.settings_hash, everything.episodes)
    runs.sources_section(url)


run_page(__file__, main)
