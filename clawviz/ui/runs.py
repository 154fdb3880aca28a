"""The Runs page at O(page): filters, sort and pages in SQL, metrics and charts from SQL
aggregates, the table and its filters in a fragment, and a row that opens its episode on one
click (issue 26 §3, issue 25 §3). `pages/runs.py` only lays these out.

Every read goes through a `clawviz.ui.data` cache keyed by the store, the settings hash and the
view (`data.runs_view_key`: filter, search hits, sort, page), so a filter change reads one page
and a view seen before reads nothing.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from clawviz import figures, store
from clawviz.export import Selection
from clawviz.settings import Settings
from clawviz.ui import data, history, state, tables
from clawviz.ui.export_panel import export_panel
from clawviz.ui.inspector import escape_md
from clawviz.ui.pages import EPISODE, page_file

EPISODE_PAGE = page_file(EPISODE)
STATS_AUTO_LIMIT = 5000
"""Above this many episodes the statistics (a pass over every kept response) wait for a click."""
KEY_PAGE = "runs_page_number"
KEY_SORT = "runs_sort"
KEY_DESC = "runs_sort_desc"
KEY_FOLLOW = "runs_follow"
"""Set by a row click (the table's on_select): the episode the follower opens in this run."""
SORT_LABELS: dict[str, str] = {
    "": "task, harness, try",
    "reward": "reward",
    "advantage": "GRPO advantage",
    "n_calls": "calls",
    "status": "status",
    "model": "model",
    "harness": "harness",
    "task_id": "task",
    "episode_id": "episode",
}
SHORT_REASONS = 20
"""Characters of the reasons column; the whole list is in the row's caption and the Episode."""
TABLE_COLUMNS = [
    "task_id", "harness", "model", "attempt", "n_calls", "reward", "advantage", "status",
    "short_reasons", "notes", "check", "episode_id",
]  # fmt: skip
"""Key columns first: at 1280 px they fit without a horizontal scroll; then the narrow notes
and check marks; the id comes last."""


# --- the follower: one click on a row opens its episode ---------------------------------------
_FOLLOW_JS = """
export default function (component) {
  const { data } = component;
  if (!Array.isArray(data) || !data[0]) return;
  const [episode, nonce] = data;
  const done = (window.__clawvizRunsFollowed = window.__clawvizRunsFollowed || {});
  if (done[nonce]) return;
  let tries = 0;
  const follow = () => {
    for (const a of document.querySelectorAll('a[data-testid="stPageLink-NavLink"]')) {
      const target = new URL(a.href, location.href);
      if (target.pathname.endsWith('/episode') && target.searchParams.get('episode') === episode) {
        done[nonce] = true;
        a.click();
        return;
      }
    }
    if (++tries < 100) setTimeout(follow, 30);
  };
  follow();
}
"""
_follower = st.components.v2.component("clawviz_runs_follow", html="", js=_FOLLOW_JS)


def _on_row_click(episode_ids: list[str]) -> None:
    """The table's on_select: remember the clicked row's episode for this run's follower."""
    event = st.session_state.get(state.KEY_RUNS_TABLE)
    rows = event.selection.rows if event is not None else []
    if rows and rows[0] < len(episode_ids):
        n = int(st.session_state.get(KEY_FOLLOW + "_n", 0)) + 1
        st.session_state[KEY_FOLLOW + "_n"] = n
        st.session_state[KEY_FOLLOW] = (episode_ids[rows[0]], f"{id(st.session_state)}-{n}")


def follow_click() -> None:
    """Open the clicked row's episode: the follower clicks the row's own page link in the
    browser, so the move is Streamlit's page-link navigation (one history entry, same tab),
    and it happens once per click (Back to Runs does not follow again)."""
    target = st.session_state.pop(KEY_FOLLOW, None)
    if target is not None:
        _follower(key="runs_follow", data=list(target), height=0)


# --- the table --------------------------------------------------------------------------------
def _episode_query(episode_id: str, call_id: Any = None) -> dict[str, str]:
    query = {state.QP_EPISODE: episode_id}
    if call_id is not None and not tables.is_missing(call_id) and str(call_id):
        query[state.QP_CALL] = str(call_id)
    return query


def open_bar(row: pd.Series | None, hint: str) -> None:
    """The selected row's way into the Episode page: a same-tab page link (st.page_link is the
    one navigation Streamlit 1.67 records as a single history entry; st.switch_page with query
    parameters records two)."""
    bar = st.container(horizontal=True, vertical_alignment="center")
    if row is None:
        bar.caption(hint)
        return
    episode_id = str(row["episode_id"])
    label = f"Open episode {episode_id}"
    if "line" in row and not tables.is_missing(row["line"]):
        label = f"Open line {int(row['line'])} of episode {episode_id}"
    bar.page_link(
        EPISODE_PAGE,
        label=label,
        icon=":material/account_tree:",
        query_params=_episode_query(episode_id, row.get("call_id")),
    )
    facts = [row.get(c) for c in ("task_id", "status", "reasons") if c in row]
    bar.caption(" · ".join(escape_md(str(f)) for f in facts if not tables.is_missing(f) and f))


def _selected(event: Any, frame: pd.DataFrame) -> pd.Series | None:
    rows = event.selection.rows if event is not None else []
    return frame.iloc[rows[0]] if rows and rows[0] < len(frame) else None


def short_reasons(joined: str) -> str:
    """A reasons cell cut to `SHORT_REASONS` characters: the first codes, then `+N` more."""
    codes = store.split_reasons(joined)
    out = ""
    for i, code in enumerate(codes):
        more = len(codes) - i
        piece = code if not out else f"{out}, {code}"
        if len(piece) > SHORT_REASONS:
            return f"{out} +{more}" if out else code[: SHORT_REASONS - 1] + "…"
        out = piece
    return out


CHECK_LABELS = {True: "✓ agrees", False: "✗ differs", None: "? unsure"}
"""The check cell of a wire episode with a linked transcript (its cross-check's "agree")."""


def episodes_table(page: pd.DataFrame, marks: data.RunsMarks) -> None:
    """One page of episodes; a click on a row opens it (the link stays under the table)."""
    ids = [str(e) for e in page["episode_id"]]
    table = page.reset_index(drop=True).assign(
        short_reasons=[short_reasons(v) for v in page["reasons"]],
        notes=[marks.notes.get(e) for e in ids],
        check=[CHECK_LABELS[marks.checks[e]] if e in marks.checks else None for e in ids],
    )[[*TABLE_COLUMNS, "reasons"]]
    event = tables.show_table(
        table,
        key=state.KEY_RUNS_TABLE,
        pinned=["task_id"],
        numbers={"reward": 2, "advantage": 2, "attempt": 0, "n_calls": 0},
        signed=["advantage"],
        hidden=["reasons"],
        labels={
            "episode_id": "episode",
            "task_id": "task",
            "advantage": "advantage",
            "n_calls": "calls",
            "short_reasons": "reasons",
        },
        column_config={
            # Widths in px: task to reasons fit 1280 px with the sidebar open (820 px).
            "task_id": st.column_config.TextColumn("task", width=80, pinned=True),
            "harness": st.column_config.TextColumn("harness", width=88),
            "model": st.column_config.TextColumn("model", width=176),
            "short_reasons": st.column_config.TextColumn(
                "reasons", width=150,
                help="The episode's reason codes, cut short; the whole list is under the "
                "table when the row is picked, and each reason on the Episode page.",
            ),
            "attempt": st.column_config.NumberColumn("try", format="%d", width=40),
            "n_calls": st.column_config.NumberColumn("calls", format="%d", width=50),
            "reward": st.column_config.NumberColumn("reward", format="%.2f", width=58),
            "advantage": st.column_config.NumberColumn("advantage", format="%+.2f", width=74),
            "status": st.column_config.TextColumn("status", width=68),
            "notes": st.column_config.NumberColumn(
                "notes", format="%d", width=52,
                help="Comments reviewers left on the episode's calls (read them on its page).",
            ),
            "check": st.column_config.TextColumn(
                "check", width=84,
                help="The harness's own transcript of this episode, loaded too, is a "
                "cross-check of it: whether its kept path agrees with the wire's.",
            ),
        },
        on_select=lambda: _on_row_click(ids),
        selection_mode="single-row",
        height=min(38 + 35 * store.RUNS_PAGE_SIZE, 38 + 35 * max(len(table), 1)),
    )
    open_bar(_selected(event, table), "Click a row to open its episode (same tab).")


def pager(total: int, view: str) -> tuple[int, Any]:
    """Previous / next page buttons and what is shown; the page number resets when the view
    changes. Returns the page and the bar (the sort goes in it)."""
    return tables.pager(total, view, size=store.RUNS_PAGE_SIZE, key=KEY_PAGE, buttons="runs")


def _sort_state() -> tuple[str | None, bool]:
    """The sort as its widgets hold it (they are drawn after the pager, in its bar)."""
    return (st.session_state.get(KEY_SORT) or None), bool(st.session_state.get(KEY_DESC, False))


def sort_controls(bar: Any) -> tuple[str | None, bool]:
    """The sort, compact, in the pager's bar (its label collapsed; the choice names it)."""
    sort = bar.selectbox(
        "Sort by", list(SORT_LABELS), format_func=lambda k: f"Sort: {SORT_LABELS[str(k)]}",
        key=KEY_SORT, label_visibility="collapsed", width=215,
    )  # fmt: skip
    desc = bar.toggle("Descending", key=KEY_DESC)
    return (sort or None), bool(desc)


# --- filters and search -----------------------------------------------------------------------
def filter_options(url: str, settings_hash: str) -> dict[str, list[str]]:
    """What each multiselect filter offers (URL parameter -> values in the store), by SQL.

    The tasks are a page (`store.runs_task_options`): the ones the URL chose, then the first
    `store.TASK_OPTIONS` whose name holds what the "Find a task" box says. A run has tens of
    thousands of tasks; every one in the multiselect would be sent on every rerun."""
    o = data.runs_options(url, settings_hash)
    everything = data.runs_view_key(store.RunsQuery(page_size=store.RUNS_PAGE_SIZE))
    reasons = sorted(data.runs_aggregates(url, settings_hash, everything)[1]["reason"])
    chosen = tuple(history.params_now().get(history.QP_TASKS, []))
    find = str(st.session_state.get(state.KEY_FILTER_TASK_FIND) or "")
    tasks = data.runs_task_options(url, settings_hash, find, chosen, store.TASK_OPTIONS)
    st.session_state[KEY_TASKS_MORE] = tasks.more
    return {
        history.QP_TASKS: tasks.tasks,
        history.QP_HARNESS: o["harness"],
        history.QP_MODEL: o["model"],
        history.QP_STATUS: o["status"],
        history.QP_REASON: reasons,
    }


KEY_TASKS_MORE = "runs_filter_tasks_more"
"""Whether more tasks match the find box than the Task filter offers (set by filter_options)."""


def _active(options: dict[str, list[str]]) -> int:
    """How many filters narrow the table (the Filters button counts them)."""
    keys = (
        state.KEY_FILTER_TASK, state.KEY_FILTER_HARNESS, state.KEY_FILTER_MODEL,
        state.KEY_FILTER_STATUS, state.KEY_FILTER_REASON,
    )  # fmt: skip
    n = sum(1 for k in keys if st.session_state.get(k))
    reward = st.session_state.get(state.KEY_FILTER_REWARD)
    if reward is not None and tuple(reward) != (0.0, 1.0):
        n += 1
    return n + (st.session_state.get(state.KEY_FILTER_NO_REWARD) is False)


def filters(where: Any, options: dict[str, list[str]]) -> store.EpisodeFilter:
    """The filter widgets (keyed, seeded from the URL by `history.seed_widgets`), in `where`:
    the Filters popover, so they take one button of the first screen, not four rows."""
    on = history.on_filter_change
    with where:
        st.text_input(
            "Find a task", key=state.KEY_FILTER_TASK_FIND,
            placeholder="part of a task id", help="The Task filter offers the first "
            f"{store.TASK_OPTIONS} tasks whose id contains this (any case), by name.",
        )  # fmt: skip
        find = str(st.session_state.get(state.KEY_FILTER_TASK_FIND) or "").strip()
        chosen = set(st.session_state.get(state.KEY_FILTER_TASK) or [])
        if find and not [t for t in options[history.QP_TASKS] if t not in chosen]:
            st.caption(f"No other task id contains “{escape_md(find)}”.")
        c = st.columns(2)
        more = bool(st.session_state.get(KEY_TASKS_MORE))
        c[0].multiselect(
            "Task", options[history.QP_TASKS], key=state.KEY_FILTER_TASK, on_change=on,
            help=f"The first {store.TASK_OPTIONS} matching tasks (by name); type in 'Find a "
            "task' for the others." if more else None,
        )  # fmt: skip
        c[1].multiselect(
            "Harness", options[history.QP_HARNESS], key=state.KEY_FILTER_HARNESS, on_change=on
        )
        c[0].multiselect(
            "Model", options[history.QP_MODEL], key=state.KEY_FILTER_MODEL, on_change=on
        )
        c[1].multiselect(
            "Status", options[history.QP_STATUS], key=state.KEY_FILTER_STATUS, on_change=on
        )
        st.multiselect(
            "Reason", options[history.QP_REASON], key=state.KEY_FILTER_REASON, on_change=on
        )
        st.slider(
            "Reward range", 0.0, 1.0, step=0.05, key=state.KEY_FILTER_REWARD, on_change=on
        )
        st.checkbox(
            "Include episodes without reward", key=state.KEY_FILTER_NO_REWARD, on_change=on
        )
    history.remember_runs_query()
    return history.filter_from(history.widget_params())


def search_bar(options: dict[str, list[str]]) -> Any:
    """One row: the search box, its role and syntax, and the Filters popover (returned)."""
    bar = st.container(horizontal=True, vertical_alignment="center", gap="small")
    on = history.on_filter_change
    bar.text_input(
        "Search calls",
        key=state.KEY_SEARCH_TEXT,
        on_change=on,
        placeholder="Search calls: words in any message or reply (a tool, an error, a path)",
        help="Every word must appear. Quotes, *, OR and - are ordinary characters unless "
        "'Query syntax' is on.",
        label_visibility="collapsed",
    )
    bar.selectbox(
        "Role", list(history.ROLES), key=state.KEY_SEARCH_ROLE, on_change=on,
        format_func=lambda r: r or "any role", label_visibility="collapsed", width=130,
    )  # fmt: skip
    bar.toggle("Query syntax", key=state.KEY_SEARCH_SYNTAX, on_change=on)
    n = _active(options)
    # A fixed label: the popover stays open while its filters change (the count is beside it).
    popover = bar.popover("Filters", icon=":material/filter_list:", key="runs_filters")
    if n:
        bar.caption(f"{n} on")
    return popover


def search_section(url: str) -> set[str] | None:
    """The search's hits (the box is in `search_bar`); returns the episodes with a hit (None:
    no search given)."""
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


# --- charts -----------------------------------------------------------------------------------
CHARTS_LABEL = "Charts: reasons, reward per harness, GRPO advantage"


def charts(url: str, settings_hash: str, view_key: str) -> None:
    """Reasons, reward per harness and GRPO advantage of the shown episodes (SQL aggregates),
    in a section drawn only while it is open (`?charts=1`, kept across filter changes).

    Closed by default: the three Plotly charts were about 300-360 ms of every filter change,
    more than the table, counts and page together on a 100,000-episode store (bench/README.md,
    "Runs filter change: the charts on demand")."""
    section = st.expander(
        CHARTS_LABEL, key=state.KEY_RUNS_CHARTS, on_change=history.on_filter_change
    )
    if not section.open:
        return
    c = data.runs_charts(url, settings_hash, view_key)
    with section:
        c1, c2, c3 = st.columns(3)
        with c1:
            if c.reasons.empty:
                st.info("No reasons: every shown episode is kept with no flags.")
            else:
                st.plotly_chart(figures.drop_reasons_figure(c.reasons), key="runs_reasons_chart")
        with c2:
            if c.rewards.empty:
                st.info("No rewards loaded (no results.jsonl).")
            else:
                st.plotly_chart(figures.reward_bins_figure(c.rewards), key="runs_reward_chart")
        with c3:
            if c.groups.empty:
                st.info("No GRPO advantages: groups need at least one scored, kept attempt.")
            else:
                fig = figures.advantage_by_group_figure(c.groups, n_groups=c.n_groups)
                st.plotly_chart(fig, key="runs_adv_chart")


# --- the parts of the page --------------------------------------------------------------------
def metrics(s: store.RunsSummary) -> None:
    m = st.columns(6)
    m[0].metric("Episodes", f"{s.episodes:,}")
    m[1].metric("Kept", f"{s.kept:,}")
    m[2].metric("Dropped", f"{s.dropped:,}")
    m[3].metric(
        "Unexplained trees",
        f"{s.unexplained:,}",
        help="Episodes the reconstruction self-check flags as unexplained_root: a tree the "
        "rules cannot explain (a second main root with no compaction, retry or session "
        "boundary, or a continuation with no summary link). Filter by that reason to see them.",
    )
    m[4].metric("Calls", f"{s.calls:,}")
    m[5].metric("Tasks", f"{s.tasks:,}")


@st.fragment
def table_view(url: str, settings: Settings, n_episodes: int) -> None:
    """Search, filters, sort, one page of the table, the export and the charts: a filter change
    reruns only this fragment, and each read is cached per view."""
    h = settings.settings_hash
    options = filter_options(url, h)
    # The URL is the truth: a pasted link or Back / Forward sets every filter widget.
    history.seed_widgets(options)
    popover = search_bar(options)
    f = filters(popover, options)
    matching = search_section(url)
    found = None if matching is None else tuple(sorted(matching))
    # The set of episodes (not its order): the key of the counts and charts, shared with the
    # page's whole-store summary when nothing is filtered; a sort change reads one page.
    view = data.runs_view_key(
        store.RunsQuery(filter=f, matching=found, page_size=store.RUNS_PAGE_SIZE)
    )
    summary = data.runs_summary(url, h, view)
    st.caption(f"{summary.episodes:,} of {n_episodes:,} episodes · click a row to open it")
    sort, desc = _sort_state()
    page_no, bar = pager(summary.episodes, f"{view}|{sort}|{desc}")
    sort, desc = sort_controls(bar)
    page = data.runs_page(url, h, data.runs_view_key(
        store.RunsQuery(filter=f, matching=found, sort=sort, descending=desc, page=page_no,
                          page_size=store.RUNS_PAGE_SIZE)
    ))  # fmt: skip
    marks = data.runs_marks(url, tuple(str(e) for e in page["episode_id"]))
    if marks.linked:
        st.caption(
            f"{marks.linked:,} transcript{'s are' if marks.linked != 1 else ' is'} shown as "
            "cross-checks of their wire episodes (the check column), not as episodes."
        )
    episodes_table(page, marks)
    follow_click()
    # A search narrows the table to its episodes: the export follows what the table shows.
    export_panel(url, settings, Selection(f, episode_ids=found), key="runs_export", scope="runs")
    if summary.episodes == 0:
        st.info("No episode matches these filters.")
    else:
        charts(url, h, view)


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


def header() -> None:
    """The title and the Reload button (another process may have written to the store)."""
    head, button = st.columns([5, 1], vertical_alignment="bottom")
    head.title("Runs")
    if button.button(
        "Reload",
        key=state.KEY_RELOAD,
        icon=":material/refresh:",
        help="Re-read the store: rows written since by the CLI or a training job appear.",
    ):
        state.clear_caches()
        st.rerun()
