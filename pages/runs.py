"""Runs page: every episode with its verdict, filters, charts, dataset statistics, sources."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from clawviz.export import Selection
from clawviz.figures import runs as figures
from clawviz.store import queries
from clawviz.ui import data, history, live, state, tables
from clawviz.ui.export_panel import export_panel
from clawviz.ui.inspector import escape_md
from clawviz.ui.pages import EPISODE, page_file, run_page

EPISODE_PAGE = page_file(EPISODE)
# Above this many episodes the statistics (a pass over every kept response) wait for a click.
STATS_AUTO_LIMIT = 5000


def filter_options(eps: pd.DataFrame) -> dict[str, list[str]]:
    """What each multiselect filter offers (URL parameter -> values in the store)."""

    def opts(col: str) -> list[str]:
        return sorted(str(v) for v in eps[col].dropna().unique())

    return {
        history.QP_TASKS: opts("task_id"),
        history.QP_HARNESS: opts("harness"),
        history.QP_MODEL: opts("model"),
        history.QP_STATUS: opts("status"),
        history.QP_REASON: queries.all_reasons(eps),
    }


def filters(options: dict[str, list[str]]) -> queries.EpisodeFilter:
    """The filter widgets (keyed, seeded from the URL by `history.seed_widgets`)."""
    reasons = options[history.QP_REASON]
    on = history.on_filter_change
    c = st.columns([3, 2, 2, 2, 3])
    c[0].multiselect("Task", options[history.QP_TASKS], key=state.KEY_FILTER_TASK, on_change=on)
    c[1].multiselect(
        "Harness", options[history.QP_HARNESS], key=state.KEY_FILTER_HARNESS, on_change=on
    )
    c[2].multiselect("Model", options[history.QP_MODEL], key=state.KEY_FILTER_MODEL, on_change=on)
    c[3].multiselect(
        "Status", options[history.QP_STATUS], key=state.KEY_FILTER_STATUS, on_change=on
    )
    c[4].multiselect("Reason", reasons, key=state.KEY_FILTER_REASON, on_change=on)
    c2 = st.columns([3, 3, 4])
    c2[0].slider("Reward range", 0.0, 1.0, step=0.05, key=state.KEY_FILTER_REWARD, on_change=on)
    c2[1].checkbox("Include episodes without reward", key=state.KEY_FILTER_NO_REWARD, on_change=on)
    history.remember_runs_query()
    return history.filter_from(history.widget_params())


def search_section(url: str) -> set[str] | None:
    """The full-text search box; returns the episodes with a hit (None: no search given)."""
    c = st.columns([6, 2, 2], vertical_alignment="bottom")
    on = history.on_filter_change
    c[0].text_input(
        "Search calls",
        key=state.KEY_SEARCH_TEXT,
        on_change=on,
        placeholder="words in any message or reply, e.g. a tool name, an error, a file path",
        help="Every word must appear. Quotes, *, OR and - are ordinary characters unless "
        "'Query syntax' is on.",
    )
    c[1].selectbox(
        "Role", list(history.ROLES), key=state.KEY_SEARCH_ROLE, on_change=on,
        format_func=lambda r: r or "any role",
    )  # fmt: skip
    c[2].toggle("Query syntax", key=state.KEY_SEARCH_SYNTAX, on_change=on)
    text, role, syntax = history.search_from(history.widget_params())
    if not text.strip():
        return None
    try:
        hits = data.search_hits(url, text, role, syntax)
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
    hits = hits.reset_index(drop=True)
    event = tables.show_table(
        hits[["episode_id", "line", "kind", "role", "snippet", "source_file", "call_id"]],
        key=state.KEY_SEARCH_TABLE,
        pinned=["episode_id", "line"],
        numbers={"line": 0},
        wrap=["snippet"],
        hidden=["call_id"],
        labels={"episode_id": "episode", "source_file": "file"},
        on_select="rerun",
        selection_mode="single-row",
    )
    open_bar(_selected(event, hits), "Select a hit, then open its call here.")
    return set(hits["episode_id"].dropna())


def _episode_query(episode_id: str, call_id=None) -> dict[str, str]:
    query = {state.QP_EPISODE: episode_id}
    if call_id is not None and not tables.is_missing(call_id) and str(call_id):
        query[state.QP_CALL] = str(call_id)
    return query


def open_bar(row: pd.Series | None, hint: str) -> None:
    """The selected row's way into the Episode page: a same-tab link.

    A link (st.page_link) is the one navigation Streamlit 1.67 records as a single history
    entry; st.switch_page with query parameters records two (the parameters on this page's
    URL, then the new page), so Back would land on this page with a stale ?episode=.
    """
    bar = st.container(horizontal=True, vertical_alignment="center")
    if row is None:
        bar.caption(hint)
        return
    episode_id = str(row["episode_id"])
    call_id = row.get("call_id")
    label = f"Open episode {episode_id}"
    if "line" in row and not tables.is_missing(row["line"]):
        label = f"Open line {int(row['line'])} of episode {episode_id}"
    bar.page_link(
        EPISODE_PAGE,
        label=label,
        icon=":material/account_tree:",
        query_params=_episode_query(episode_id, call_id),
    )
    facts = [row.get(c) for c in ("task_id", "status", "reasons") if c in row]
    bar.caption(" · ".join(escape_md(str(f)) for f in facts if not tables.is_missing(f) and f))


def _selected(event, frame: pd.DataFrame) -> pd.Series | None:
    rows = event.selection.rows if event is not None else []
    return frame.iloc[rows[0]] if rows and rows[0] < len(frame) else None


def episodes_table(shown: pd.DataFrame) -> None:
    table = shown.reset_index(drop=True)[
        ["episode_id", "task_id", "status", "reasons", "reward", "advantage", "harness", "model",
         "attempt", "n_calls"]
    ]  # fmt: skip
    event = tables.show_table(
        table,
        key=state.KEY_RUNS_TABLE,
        pinned=["episode_id", "task_id", "status"],
        numbers={"reward": 2, "advantage": 2, "attempt": 0, "n_calls": 0},
        signed=["advantage"],
        wrap=["reasons"],
        labels={
            "episode_id": "episode",
            "task_id": "task",
            "advantage": "GRPO advantage",
            "n_calls": "calls",
        },
        on_select="rerun",
        selection_mode="single-row",
        height=min(600, 38 + 35 * max(len(table), 1)),
    )
    open_bar(_selected(event, table), "Select a row, then open it here (same tab).")


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
    options = filter_options(eps)
    # The URL is the truth: a pasted link or Back / Forward sets every filter widget.
    history.seed_widgets(options)
    matching = search_section(url)
    f = filters(options)
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
