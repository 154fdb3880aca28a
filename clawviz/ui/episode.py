"""The Episode page's logic (`pages/episode.py` is its layout): the compact top row (title,
previous / next in the Runs order, the episode find box), the URL-driven selection, the alerts
and the facts header, the client-side explorer with its one-file download, and the Workspace
link. Every selection lives in the URL (?episode=&call=&path=&compare=&section=&panel=)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import streamlit as st

from clawviz import store
from clawviz.export import Selection
from clawviz.settings import Settings
from clawviz.types import Role, State
from clawviz.ui import data, history, sections, state
from clawviz.ui.decision_panel import episode_reasons
from clawviz.ui.explorer.classic import KEY_PATH_SEEN, inspector, paths_section, tree_section
from clawviz.ui.export_panel import export_panel
from clawviz.ui.harness_evidence import harness_caption
from clawviz.ui.inspector import escape_md
from clawviz.ui.pages import WORKSPACE, page_file

if TYPE_CHECKING:
    from streamlit.delta_generator import DeltaGenerator


WORKSPACE_PAGE = page_file(WORKSPACE)
KEY_PREV = "episode_prev"
KEY_NEXT = "episode_next"
KEY_FIND = "episode_find"
FIND_LIMIT = 8


def _fmt(v: float | None, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def open_episode(episode_id: str | None) -> None:
    """Show another episode: one history entry, its own selection starts fresh."""
    st.session_state[KEY_FIND] = ""
    state.set_params(episode=episode_id, call=None, path=None, compare=None)


def filtered_order() -> list[str] | None:
    """The episodes in the Runs table's order under the Runs filters last used in this session,
    or None when there are none (then the bounded queries of `store.nav` walk the default
    order without loading the list)."""
    params = st.session_state.get(state.KEY_RUNS_QUERY) or {}
    if not params:
        return None
    text, role, syntax = history.search_from(params)
    matching = None
    if text.strip():
        try:
            hits = data.search_hits(state.database_url(), text, role, syntax)
            matching = set(hits["episode_id"].dropna())
        except ValueError:
            matching = None
    eps = data.episode_list(state.database_url(), state.current_settings().settings_hash)
    return history.runs_order(eps, params, matching)


def place(episode_id: str) -> tuple[str | None, str | None, str]:
    """(previous, next, "i of N in ...") of the episode in the Runs order."""
    order = filtered_order()
    if order is not None and episode_id in order:
        prev_id, next_id = history.neighbours(order, episode_id)
        return (
            prev_id,
            next_id,
            f"{order.index(episode_id) + 1} of {len(order):,} in the Runs filters",
        )
    with state.get_session() as session:
        pos = store.neighbours(session, episode_id)
    if pos is None:
        return None, None, ""
    return pos.previous, pos.next, f"{pos.index:,} of {pos.total:,} in the Runs table"


TOP_CSS = """<style>
[data-testid="stMainBlockContainer"]:has(.st-key-episode_top) { padding-top: 2.6rem; }
.st-key-episode_top h1 { font-size: 1.2rem; padding: 0; margin: 0; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; max-width: 34ch; }
.st-key-episode_top { row-gap: 0.3rem; }
</style>"""
# The Episode page's top row stays one line, so the explorer below it is in view at 1280x720.


def top_row() -> DeltaGenerator:
    """The compact row above the explorer: the episode's title, then the switcher."""
    st.html(TOP_CSS)
    return st.container(horizontal=True, vertical_alignment="center", key="episode_top")


def episode_switcher(episode_id: str, row: DeltaGenerator) -> None:
    """Previous / next in the Runs order, and a search of the store's episodes (by id prefix or
    task, a bounded query: no list of every episode is loaded)."""
    prev_id, next_id, where = place(episode_id)
    row.button(
        "Previous",
        key=KEY_PREV,
        icon=":material/chevron_left:",
        disabled=prev_id is None,
        on_click=open_episode,
        args=(prev_id,),
        help=f"Episode {prev_id}" if prev_id else "This is the first episode of the list.",
    )
    row.button(
        "Next",
        key=KEY_NEXT,
        icon=":material/chevron_right:",
        disabled=next_id is None,
        on_click=open_episode,
        args=(next_id,),
        help=f"Episode {next_id}" if next_id else "This is the last episode of the list.",
    )
    find_box(row)
    row.caption(where)


def find_box(where: DeltaGenerator) -> None:
    """A text box that finds episodes by id prefix or task on the server."""
    where.text_input(
        "Find an episode",
        key=KEY_FIND,
        placeholder="Find: episode id or task…",
        label_visibility="collapsed",
        width=220,
    )


def find_results() -> None:
    """The episodes the find box matches (at most FIND_LIMIT), each a button that opens it."""
    text = (st.session_state.get(KEY_FIND) or "").strip()
    if not text:
        return
    with state.get_session() as session:
        hits = store.search_episodes(session, text, limit=FIND_LIMIT)
    row = st.container(horizontal=True, vertical_alignment="center")
    if not hits:
        row.caption(f"No episode id or task starts with {escape_md(text)}.")
        return
    row.caption(
        f"{len(hits)} match{'es' if len(hits) != 1 else ''}"
        + (" (first ones)" if len(hits) == FIND_LIMIT else "")
        + ":"
    )
    for i, ep in enumerate(hits):
        row.button(
            escape_md(ep),
            key=f"episode_hit_{i}",
            on_click=open_episode,
            args=(ep,),
            type="tertiary",
        )


def init_selection(episode_id: str, call_ids: list[str], default_call: str) -> None:
    """Set the widgets from the URL on every run: the URL is the truth, so a pasted link and
    Back / Forward restore the selection they name (no call in the URL: the default call)."""
    changed = st.session_state.get(state.KEY_EPISODE_LOADED) != episode_id
    st.session_state[state.KEY_EPISODE_LOADED] = episode_id
    st.session_state[state.KEY_LAST_EPISODE] = episode_id
    if changed:
        # A row picked in another episode's Paths table must not highlight a path here.
        for key in (state.KEY_PATHS_TABLE, KEY_PATH_SEEN):
            st.session_state.pop(key, None)
    wanted = state.get_param(state.QP_CALL)
    st.session_state[state.KEY_CALL_SELECT] = wanted if wanted in call_ids else default_call
    compare = state.get_param(state.QP_COMPARE)
    st.session_state[state.KEY_COMPARE_SELECT] = compare or state.NONE_OPTION
    sections.seed()


def first_main_call(view: data.EpisodeView) -> str:
    """The call opened by default: the first kept call, else the first main call, else the first."""
    decisions = view.analysis.decisions if view.analysis else {}
    for wanted in (State.KEPT, None):
        for c in view.calls:
            d = decisions.get(c.call_id)
            if d and d.role == Role.MAIN and (wanted is None or d.state == wanted):
                return c.call_id
    return view.calls[0].call_id


def on_compare_select() -> None:
    choice = st.session_state.get(state.KEY_COMPARE_SELECT)
    other = None if choice == state.NONE_OPTION else choice
    # The section stays Compare whatever the URL without `section=` would imply.
    state.set_params(compare=other, section=sections.section_value(sections.SECTION_COMPARE, other))


def alerts(view: data.EpisodeView) -> None:
    """What must not be missed, above the explorer: a failed analysis (rare; shown whole)."""
    a = view.analysis
    if a is not None and a.status == "analysis_error":
        st.error(
            "The analysis of this episode failed (analysis_error); the other episodes are "
            "unaffected. The error:"
        )
        st.code("\n".join(r.evidence for r in a.reasons), language=None, wrap_lines=True)
    if view.analysis_error:
        st.error("The analysis of this episode failed; calls are shown without decisions.")
        st.code(view.analysis_error, language=None)


def header(view: data.EpisodeView) -> None:
    """The episode's facts, metrics, reasons and notes (below the explorer, in an expander)."""
    ep, a = view.episode, view.analysis
    reward = view.reward
    facts = [
        ("Task", ep.get("task_id")),
        ("Harness", ep.get("harness")),
        ("Model", ep.get("model")),
        ("Attempt", ep.get("attempt")),
        ("Calls", len(view.calls)),
    ]
    st.markdown(
        " · ".join(f"**{k}** {escape_md(str(v)) if v is not None else '—'}" for k, v in facts)
    )
    harness_caption(view)
    cols = st.columns([1, 1, 1, 3])
    cols[0].metric("Reward", _fmt(reward))
    cols[1].metric("GRPO advantage", _fmt(a.advantage if a else None, signed=True))
    cols[2].metric("Status", a.status if a else "not analysed")
    if a is not None:
        episode_reasons(a, view.calls)
        for r in a.reasons:
            if r.code == "unexplained_root":
                st.warning(
                    "The reconstruction rules cannot explain this tree, so it may be drawn "
                    "wrong (unexplained_root"
                    + (", dropped" if a.status == "dropped" else ", kept by the setting")
                    + "): "
                    + escape_md(r.evidence),
                    icon=":material/account_tree:",
                )
    if reward is None:
        st.info(
            "This episode has no reward: no verifier result was loaded for it, so it has no "
            "advantage (a missing reward is never read as 0)."
        )
    if len(view.calls) == 1:
        st.info("This episode has a single call: its tree is one node.")
    if ep.get("source_kind") == "transcript":
        from clawviz.ingest import TRANSCRIPT_LIMITS

        st.warning(str(TRANSCRIPT_LIMITS), icon=":material/history_edu:")


def explorer_section(
    view: data.EpisodeView, url: str, settings: Settings, default_call: str
) -> None:
    """The client-side explorer (tree and inspector side by side, issue 25), and the download
    of the same explorer as one offline HTML file (`clawviz share`)."""
    from clawviz.ui.explorer import component

    episode_id = view.episode["episode_id"]
    prices = str(settings.prices)
    payload = component.packed_explorer_payload(
        url, episode_id, settings.settings_hash, settings, prices=prices
    )
    if payload is None:
        return
    component.episode_explorer(
        payload,
        initial=default_call,
        key="episode_explorer",
        comments=component.episode_comments(episode_id),
    )
    row = st.container(horizontal=True, vertical_alignment="center")
    redact = row.toggle(
        "Redact", key="episode_share_redact", help="Leave out system prompts and tool results."
    )
    row.download_button(
        "Download as one HTML file",
        data=component.share_file(
            url, episode_id, settings.settings_hash, settings, redact, prices
        ),
        file_name=f"clawviz-{episode_id}{'-redacted' if redact else ''}.html",
        mime="text/html",
        icon=":material/download:",
        key="episode_share_download",
        on_click="ignore",
    )
    row.caption(
        "Click a node, or press j / k / u / d / f / p / c (? lists the keys). The classic tree "
        "with Paths and Compare is below."
    )


def workspace_link(view: data.EpisodeView) -> None:
    """The Workspace diff link, only for an attempt whose results name a workspace."""
    if not data.has_workspace(state.database_url(), view.episode["episode_id"]):
        st.caption("No workspace recorded for this attempt (its results line names none).")
        return
    st.page_link(
        WORKSPACE_PAGE,
        label="Workspace diff of this attempt",
        icon=":material/difference:",
        query_params={state.QP_EPISODE: view.episode["episode_id"]},
    )


def open_view(url: str, settings: Settings) -> data.EpisodeView | None:
    """The episode the URL names (a bare /episode: the one last shown), or None after saying
    why there is none to show: an empty store, no episode named (a find box then), or an id
    this store does not have."""
    episode_id = state.get_param(state.QP_EPISODE) or st.session_state.get(state.KEY_LAST_EPISODE)
    with state.get_session() as session:
        empty = not store.has_episodes(session)
    if empty:
        st.title("Episode")
        st.info("The store is empty: load logs on the Ingest page first.")
        return None
    if not episode_id:
        st.title("Episode")
        st.info("Find an episode here (its id or task) or pick one on the Runs page.")
        find_box(st.container())
        find_results()
        return None
    view = data.episode_view(url, episode_id, settings.settings_hash, settings)
    if view is None:
        st.title("Episode")
        st.warning(f"There is no episode {escape_md(episode_id)!s} in this store.")
        if st.session_state.get(state.KEY_LAST_EPISODE) == episode_id:
            st.session_state.pop(state.KEY_LAST_EPISODE, None)
        find_box(st.container())
        find_results()
    return view


def top(view: data.EpisodeView) -> None:
    """The compact top row (title, previous / next, find box), find's matches and the alerts."""
    episode_id = view.episode["episode_id"]
    row = top_row()
    row.title(f"Episode {escape_md(episode_id)}", anchor=False)
    episode_switcher(episode_id, row)
    find_results()
    alerts(view)


def below_explorer(view: data.EpisodeView, url: str, settings: Settings) -> None:
    """Under the explorer: the facts in an expander, Export, the Workspace link, then the
    classic tree and the one section the URL picks (call inspector, Paths or Compare)."""
    episode_id = view.episode["episode_id"]
    call_ids = [c.call_id for c in view.calls]
    with st.expander("Episode facts, reasons and notes", expanded=False):
        header(view)
    export_panel(
        url, settings, Selection(episode_ids=(episode_id,)), key="episode_export", scope=episode_id
    )
    workspace_link(view)
    tree_section(view, call_ids)
    section = sections.section_control()
    if section != sections.SECTION_PATHS:
        # The table is not drawn: back on Paths it starts unselected, and that must not clear
        # the highlight the URL names.
        for key in (state.KEY_PATHS_TABLE, KEY_PATH_SEEN):
            st.session_state.pop(key, None)
    if section == sections.SECTION_CALL:
        inspector(view, call_ids)
    elif section == sections.SECTION_PATHS:
        paths_section(view)
    else:
        from clawviz.ui import compare

        compare.compare_section(view, settings, on_change=on_compare_select)
