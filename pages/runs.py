"""Runs page: every episode with its verdict, filters, charts, dataset statistics, sources."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from clawviz.export import Selection
from clawviz.figures import runs as figures
from clawviz.store import queries
from clawviz.ui import data, live, state
from clawviz.ui.export_panel import export_panel
from clawviz.ui.pages import EPISODE, page_file, run_page

EPISODE_PAGE = page_file(EPISODE)
# Above this many episodes the statistics (a pass over every kept response) wait for a click.
STATS_AUTO_LIMIT = 5000


def filters(eps: pd.DataFrame) -> queries.EpisodeFilter:
    """The filter widgets (all keyed) and the filter they describe."""

    def opts(col: str) -> list[str]:
        return sorted(str(v) for v in eps[col].dropna().unique())

    reasons = queries.all_reasons(eps)
    c = st.columns([3, 2, 2, 2, 3])
    tasks = c[0].multiselect("Task", opts("task_id"), key=state.KEY_FILTER_TASK)
    harnesses = c[1].multiselect("Harness", opts("harness"), key=state.KEY_FILTER_HARNESS)
    models = c[2].multiselect("Model", opts("model"), key=state.KEY_FILTER_MODEL)
    statuses = c[3].multiselect("Status", opts("status"), key=state.KEY_FILTER_STATUS)
    chosen_reasons = c[4].multiselect("Reason", reasons, key=state.KEY_FILTER_REASON)
    c2 = st.columns([3, 3, 4])
    lo, hi = c2[0].slider(
        "Reward range", 0.0, 1.0, (0.0, 1.0), step=0.05, key=state.KEY_FILTER_REWARD
    )
    no_reward = c2[1].checkbox(
        "Include episodes without reward", value=True, key=state.KEY_FILTER_NO_REWARD
    )
    full_range = (lo, hi) == (0.0, 1.0)
    return queries.EpisodeFilter(
        tasks=tuple(tasks),
        harnesses=tuple(harnesses),
        models=tuple(models),
        statuses=tuple(statuses),
        reasons=tuple(chosen_reasons),
        reward_min=None if full_range else lo,
        reward_max=None if full_range else hi,
        include_missing_reward=no_reward,
    )


def search_section(url: str) -> set[str] | None:
    """The full-text search box; returns the episodes with a hit (None: no search given)."""
    c = st.columns([6, 2, 2], vertical_alignment="bottom")
    text = c[0].text_input(
        "Search calls",
        key=state.KEY_SEARCH_TEXT,
        placeholder="words in any message or reply, e.g. a tool name, an error, a file path",
        help="Every word must appear. Quotes, *, OR and - are ordinary characters unless "
        "'Query syntax' is on.",
    )
    role = c[1].selectbox(
        "Role", ["", "user", "assistant", "tool"], key=state.KEY_SEARCH_ROLE,
        format_func=lambda r: r or "any role",
    )  # fmt: skip
    syntax = c[2].toggle("Query syntax", key=state.KEY_SEARCH_SYNTAX)
    if not text.strip():
        return None
    try:
        hits = data.search_hits(url, text, role or None, syntax)
    except ValueError as exc:
        st.error(str(exc))
        return None
    if hits.empty:
        st.info(f"No message or reply says {text!r}.")
        return set()
    st.caption(
        f"{len(hits):,} hit(s) in {hits['episode_id'].nunique():,} episode(s); the table below "
        "shows only those episodes. «…» marks the match; open a hit to see its call in the tree."
    )
    st.dataframe(
        hits[["open", "episode_id", "line", "kind", "role", "snippet", "source_file"]],
        key=state.KEY_SEARCH_TABLE,
        hide_index=True,
        column_config={
            "open": st.column_config.LinkColumn("open", display_text="open call"),
            "snippet": st.column_config.TextColumn("snippet", width="large"),
        },
    )
    return set(hits["episode_id"].dropna())


def episodes_table(shown: pd.DataFrame) -> None:
    table = shown.assign(open=("episode?episode=" + shown["episode_id"].astype(str)))[
        ["episode_id", "task_id", "harness", "attempt", "status", "reasons", "reward", "advantage",
         "model", "n_calls", "open"]
    ]  # fmt: skip
    event = st.dataframe(
        table,
        key=state.KEY_RUNS_TABLE,
        on_select="rerun",
        selection_mode="single-row",
        hide_index=True,
        height=min(600, 38 + 35 * max(len(table), 1)),
        column_config={
            "episode_id": st.column_config.TextColumn("episode"),
            "task_id": st.column_config.TextColumn("task"),
            "n_calls": st.column_config.NumberColumn("calls"),
            "reward": st.column_config.NumberColumn(format="%.3f"),
            "advantage": st.column_config.NumberColumn("GRPO advantage", format="%+.3f"),
            "open": st.column_config.LinkColumn("open", display_text="open ↗"),
        },
    )
    rows = event.selection.rows if event is not None else []
    if rows:
        episode_id = str(table.iloc[rows[0]]["episode_id"])
        st.switch_page(EPISODE_PAGE, query_params={state.QP_EPISODE: episode_id})


def charts(eps: pd.DataFrame) -> None:
    counts = queries.reason_counts(eps)
    c1, c2, c3 = st.columns(3)
    with c1:
        if counts.empty:
            st.info("No reasons: every shown episode is kept with no flags.")
        else:
            st.plotly_chart(figures.drop_reasons_figure(counts), key="runs_reasons_chart")
    with c2:
        if eps["reward"].notna().any():
            st.plotly_chart(figures.reward_by_harness_figure(eps), key="runs_reward_chart")
        else:
            st.info("No rewards loaded (no results.jsonl).")
    with c3:
        groups = queries.group_frame(eps)
        if groups.empty:
            st.info("No GRPO advantages: groups need at least one scored, kept attempt.")
        else:
            st.plotly_chart(figures.advantage_by_group_figure(groups), key="runs_adv_chart")


def stats_section(url: str, settings_hash: str, n_episodes: int) -> None:
    st.subheader("Dataset statistics of kept trajectories")
    if n_episodes > STATS_AUTO_LIMIT and not st.toggle(
        f"Compute them over all {n_episodes:,} episodes (reads every kept response once)",
        key=state.KEY_RUNS_STATS,
    ):
        return
    stats = data.dataset_stats(url, settings_hash)
    if stats.n_trajectories == 0:
        st.info("No kept trajectories under the current settings.")
        return
    st.caption(
        f"Means over {stats.n_trajectories} kept episodes (kept main calls only), next to the "
        "ClawGym SFT paper's figures."
    )
    st.dataframe(
        stats.comparison(),
        hide_index=True,
        column_config={
            "this store": st.column_config.NumberColumn(format="%.2f"),
            "paper (ClawGym SFT)": st.column_config.NumberColumn(format="%.2f"),
            "ratio": st.column_config.NumberColumn(format="%.2f×"),
        },
    )


def sources_section(url: str) -> None:
    st.subheader("Sources")
    src = data.sources(url)
    if src.empty:
        st.info("No files ingested yet.")
        return
    st.dataframe(
        src,
        hide_index=True,
        key="runs_sources_table",
        column_config={
            "id": None,
            "size_bytes": st.column_config.NumberColumn("bytes", format="compact"),
            "n_lines": st.column_config.NumberColumn("lines"),
            "n_calls": st.column_config.NumberColumn("calls"),
            "n_episodes": st.column_config.NumberColumn("episodes"),
            "n_rejected": st.column_config.NumberColumn("rejected"),
            "ingested_at": st.column_config.DatetimeColumn("ingested", format="YYYY-MM-DD HH:mm"),
        },
    )
    rej = data.rejected(url)
    with st.expander(f"Rejected lines ({len(rej)})", icon=":material/block:"):
        if rej.empty:
            st.caption("No line was rejected.")
        else:
            # Raw lines are untrusted log text: the table shows them as plain strings.
            st.dataframe(rej, hide_index=True, key="runs_rejected_table")


def main() -> None:
    head, button = st.columns([5, 1], vertical_alignment="bottom")
    head.title("Runs")
    # Another process (the CLI, a training job) may have written to the store since.
    if button.button(
        "Reload",
        key=state.KEY_RELOAD,
        icon=":material/refresh:",
        help="Re-read the store: rows written since by the CLI or a training job appear.",
    ):
        state.clear_caches()
        st.rerun()
    url = state.database_url()
    settings = state.current_settings()
    live.indicator(url)
    eps = data.episodes(url, settings.settings_hash)
    if eps.empty:
        st.info(
            "The store is empty. Load proxy logs, results and task folders on the Ingest page "
            "(or restart the app without CLAWVIZ_NO_SAMPLES to load the bundled samples)."
        )
        sources_section(url)
        return
    kept = int((eps["status"] == "kept").sum())
    dropped = int((eps["status"] == "dropped").sum())
    unexplained = queries.count_with_reason(eps, "unexplained_root")
    m = st.columns(6)
    m[0].metric("Episodes", f"{len(eps):,}")
    m[1].metric("Kept", f"{kept:,}")
    m[2].metric("Dropped", f"{dropped:,}")
    m[3].metric(
        "Unexplained trees",
        f"{unexplained:,}",
        help="Episodes the reconstruction self-check flags as unexplained_root: a tree the "
        "rules cannot explain (a second main root with no compaction, retry or session "
        "boundary, or a continuation with no summary link). Filter by that reason to see them.",
    )
    m[4].metric("Calls", f"{int(eps['n_calls'].fillna(0).sum()):,}")
    m[5].metric("Tasks", f"{eps['task_id'].nunique():,}")
    matching = search_section(url)
    f = filters(eps)
    shown = queries.filter_episodes(eps, f)
    if matching is not None:
        shown = shown[shown["episode_id"].isin(matching)]
    st.caption(f"{len(shown):,} of {len(eps):,} episodes · select a row to open it")
    episodes_table(shown)
    # A search narrows the table to its episodes: the export follows what the table shows.
    ids = None if matching is None else tuple(shown["episode_id"])
    export_panel(url, settings, Selection(f, episode_ids=ids), key="runs_export", scope="runs")
    if shown.empty:
        st.info("No episode matches these filters.")
    else:
        charts(shown)
    stats_section(url, settings.settings_hash, len(eps))
    sources_section(url)


run_page(__file__, main)
