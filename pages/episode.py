"""Episode page: header with reasons, the interactive call tree, the call inspector, paths and
compare. Every selection lives in the URL (?episode=&call=&path=&compare=)."""

from __future__ import annotations

import json
import math

import pandas as pd
import streamlit as st

from clawviz.export import Selection
from clawviz.figures.layout import tree_layout
from clawviz.figures.palette import COLOUR_MODES, state_colour
from clawviz.figures.tree import call_from_selection
from clawviz.types import Call, Role, State
from clawviz.ui import compare, data, diff_view, state, token_view
from clawviz.ui.decision_panel import call_decision, episode_reasons
from clawviz.ui.export_panel import export_panel
from clawviz.ui.figcache import tree_figure
from clawviz.ui.inspector import (
    call_label,
    duration_s,
    escape_md,
    path_rows,
    role_reason_text,
)
from clawviz.ui.pages import WORKSPACE, page_file, run_page
from clawviz.ui.render import render_message

WORKSPACE_PAGE = page_file(WORKSPACE)
KEY_PATH_SEEN = "episode_paths_seen"


def _fmt(v, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def on_episode_pick() -> None:
    choice = st.session_state.get(state.KEY_EPISODE_PICK)
    state.set_params(
        episode=choice if choice != state.NONE_OPTION else None, call=None, path=None, compare=None
    )


def episode_picker(eps: pd.DataFrame, label: str) -> None:
    """A selectbox of all episodes (the way in when the URL names none or a wrong one)."""
    options = [state.NONE_OPTION] + eps["episode_id"].tolist()
    st.selectbox(label, options, key=state.KEY_EPISODE_PICK, on_change=on_episode_pick)


def init_selection(episode_id: str, call_ids: list[str], default_call: str) -> None:
    """Seed the widgets from the URL when this episode is opened (a pasted link restores them)."""
    changed = st.session_state.get(state.KEY_EPISODE_LOADED) != episode_id
    st.session_state[state.KEY_EPISODE_LOADED] = episode_id
    if changed:
        # A row picked in another episode's Paths table must not highlight a path here.
        for key in (state.KEY_PATHS_TABLE, KEY_PATH_SEEN):
            st.session_state.pop(key, None)
    # Widget state is dropped when the user visits another page, so a missing key is re-seeded.
    if changed or state.KEY_CALL_SELECT not in st.session_state:
        wanted = state.get_param(state.QP_CALL)
        st.session_state[state.KEY_CALL_SELECT] = wanted if wanted in call_ids else default_call
    if changed or state.KEY_COMPARE_SELECT not in st.session_state:
        compare = state.get_param(state.QP_COMPARE)
        st.session_state[state.KEY_COMPARE_SELECT] = compare or state.NONE_OPTION


def first_main_call(view: data.EpisodeView) -> str:
    """The call opened by default: the first kept call, else the first main call, else the first."""
    decisions = view.analysis.decisions if view.analysis else {}
    for wanted in (State.KEPT, None):
        for c in view.calls:
            d = decisions.get(c.call_id)
            if d and d.role == Role.MAIN and (wanted is None or d.state == wanted):
                return c.call_id
    return view.calls[0].call_id


def on_tree_select() -> None:
    cid = call_from_selection(st.session_state.get(state.KEY_TREE))
    if cid:
        st.session_state[state.KEY_CALL_SELECT] = cid
        state.set_params(call=cid)


def on_call_select() -> None:
    state.set_params(call=st.session_state.get(state.KEY_CALL_SELECT))


def on_compare_select() -> None:
    choice = st.session_state.get(state.KEY_COMPARE_SELECT)
    state.set_params(compare=None if choice == state.NONE_OPTION else choice)


def header(view: data.EpisodeView) -> None:
    ep, a = view.episode, view.analysis
    st.title(f"Episode {escape_md(ep['episode_id'])}")
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
    if a is not None and a.status == "analysis_error":
        st.error(
            "The analysis of this episode failed (analysis_error); the other episodes are "
            "unaffected. The error:"
        )
        st.code("\n".join(r.evidence for r in a.reasons), language=None, wrap_lines=True)
    if view.analysis_error:
        st.error("The analysis of this episode failed; calls are shown without decisions.")
        st.code(view.analysis_error, language=None)
    if reward is None:
        st.info(
            "This episode has no reward: no verifier result was loaded for it, so it has no "
            "advantage (a missing reward is never read as 0)."
        )
    if len(view.calls) == 1:
        st.info("This episode has a single call: its tree is one node.")
    if ep.get("source_kind") == "transcript":
        try:
            from clawviz.ingest.transcripts import TRANSCRIPT_LIMITS
        except ImportError:
            TRANSCRIPT_LIMITS = "Rebuilt from a harness transcript, not from a proxy log."
        st.warning(str(TRANSCRIPT_LIMITS), icon=":material/history_edu:")


def tree_section(view: data.EpisodeView, call_ids: list[str]) -> None:
    c1, c2, c3 = st.columns([2, 2, 3])
    colour_by = (
        c1.segmented_control("Colour by", COLOUR_MODES, default="state", key=state.KEY_COLOUR_BY)
        or "state"
    )
    collapse = c2.toggle("Collapse auxiliary threads", key=state.KEY_COLLAPSE_AUX)
    path_id = state.get_param(state.QP_PATH)
    layout = tree_layout(view.calls, view.analysis)
    if path_id and path_id not in layout.paths:
        path_id = None
    if path_id:
        row = c3.container(horizontal=True, vertical_alignment="center")
        leaf = next((n for n in layout.nodes if n.call_id == layout.paths[path_id][-1]), None)
        ending = f" (ending at call {leaf.label})" if leaf else ""
        row.caption(f"Highlighted path: {escape_md(path_id)}{escape_md(ending)}")
        if row.button("Clear highlight", key="episode_clear_path", icon=":material/close:"):
            state.set_params(path=None)
            st.rerun()
    fig = tree_figure(
        layout,
        colour_by=colour_by,
        highlight_path=path_id,
        collapse_aux=collapse,
        selected_call=st.session_state.get(state.KEY_CALL_SELECT),
    )
    st.plotly_chart(
        fig,
        key=state.KEY_TREE,
        on_select=on_tree_select,
        selection_mode="points",
        config={"displaylogo": False, "scrollZoom": True},
    )
    hint = (
        "Click a node to inspect it (or pick it below). Each node shows the call's number (its "
        "log file line, the same number everywhere). Circles: main calls, diamonds: "
        "auxiliary, ×: failed; a dashed orange link goes from a failed or replaced call to its "
        "retry; ⚑ marks the call an episode reason is pinned on. Leaves of kept paths carry "
        "reward R and advantage A."
    )
    if fig.layout.xaxis.rangeslider.visible:
        lo, hi = fig.layout.xaxis.range
        hint += (
            f" Long episode: depths {max(lo, 0):.0f}–{hi:.0f} around the selected call are shown; "
            "drag the slider under the tree to move along it, scroll to zoom."
        )
    st.caption(hint)


def inspector(view: data.EpisodeView, call_ids: list[str]) -> None:
    calls = {c.call_id: c for c in view.calls}
    decisions = view.analysis.decisions if view.analysis else {}
    labels = {cid: call_label(calls[cid], decisions.get(cid)) for cid in call_ids}
    st.subheader("Call inspector")
    cid = st.selectbox(
        "Call",
        call_ids,
        format_func=lambda c: labels.get(c, c),
        key=state.KEY_CALL_SELECT,
        on_change=on_call_select,
    )
    call = calls[cid]
    d = decisions.get(cid)
    parent = calls.get(d.parent_call) if d and d.parent_call else None
    if d is not None:
        colour = state_colour(d.state)
        text = f"{d.state}" + (f": {d.reason}" if d.reason else "")
        line = st.container(horizontal=True)
        line.badge(escape_md(d.role), color="gray")
        line.badge(escape_md(text), color=colour)
        if role_reason_text(d):
            line.caption(escape_md(role_reason_text(d)))
    call_decision(view.analysis, view.calls, cid)
    cols = st.columns(6)
    cols[0].metric("HTTP", str(call.http_status) if call.http_status is not None else "—")
    dur = duration_s(call)
    cols[1].metric("Duration", f"{dur:.2f} s" if dur is not None else "—")
    u = call.usage
    cols[2].metric("Input tokens", _int(u.input_tokens))
    cols[3].metric("Output tokens", _int(u.output_tokens))
    cols[4].metric("Cache read", _int(u.cache_read_input_tokens))
    cols[5].metric("Cache write", _int(u.cache_creation_input_tokens))
    st.caption(
        f"{escape_md(call.endpoint)} · {escape_md(call.model or '?')} · "
        f"{escape_md(call.source_file)} line {call.line}"
        + (f" · stop: {escape_md(call.stop_reason)}" if call.stop_reason else "")
    )
    if call.failure or call.error:
        st.error(f"Failed: {call.failure or 'error'}")
        if call.error:
            st.code(call.error, language=None, wrap_lines=True)

    req, resp, toks, raw = st.tabs(["Request (vs parent)", "Response", "Tokens", "Raw JSON"])
    with req:
        diff_view.request_tab(call, parent, view)
    with resp:
        if call.response:
            render_message(call.response)
        else:
            st.info("No response was recorded for this call.")
    with toks:
        token_view.tokens_tab(call, view)
    with raw:
        if st.toggle("Load the raw request and response", key=state.KEY_RAW_JSON):
            raw_tab(call)


def _int(v: int | None) -> str:
    return f"{v:,}" if v is not None else "—"


def raw_tab(call: Call) -> None:
    raw = data.raw_call(state.database_url(), call.call_id)
    if raw is None:
        st.warning("This call is not in the store.")
        return
    st.caption("Request body (as sent, rebuilt from the store)")
    st.json(raw["request"], expanded=1)
    st.caption("Response body (as logged)")
    body = raw.get("raw_response")
    if body:
        try:
            st.json(json.loads(body), expanded=1)
        except ValueError:
            st.code(body, language=None, wrap_lines=True)
    else:
        st.caption("(none)")
    st.caption("Headers")
    st.json(json.loads(raw.get("headers_json") or "{}"), expanded=False)


def paths_section(view: data.EpisodeView) -> None:
    st.subheader("Paths")
    if view.analysis is None or not view.analysis.paths:
        st.info("No root-to-leaf paths: this episode has no analysed main calls.")
        return
    rows = path_rows(view.analysis, {c.call_id: c for c in view.calls})
    ids = [r["path"] for r in rows]
    df = pd.DataFrame(rows)
    event = st.dataframe(
        df,
        key=state.KEY_PATHS_TABLE,
        on_select="rerun",
        selection_mode="single-row",
        hide_index=True,
        column_config={
            "reward": st.column_config.NumberColumn(format="%.3f"),
            "GRPO advantage": st.column_config.NumberColumn(format="%+.3f"),
            "PPO return": st.column_config.NumberColumn(format="%.3f"),
        },
    )
    picked = event.selection.rows if event is not None else []
    chosen = ids[picked[0]] if picked and picked[0] < len(ids) else None
    # Only a change of the table selection moves the highlight, so a path named in the URL
    # survives a fresh table with nothing selected; the rerun redraws the tree above.
    if chosen != st.session_state.get(KEY_PATH_SEEN):
        st.session_state[KEY_PATH_SEEN] = chosen
        if chosen != state.get_param(state.QP_PATH):
            state.set_params(path=chosen)
            st.rerun()
    if not any(p.has_values for p in view.analysis.paths):
        st.caption(
            "PPO: no value estimates were logged, so each kept path shows its return R "
            "(gamma = lambda = 1); select a row to highlight its path in the tree."
        )


def main() -> None:
    url = state.database_url()
    settings = state.current_settings()
    eps = data.episodes(url, settings.settings_hash)
    episode_id = state.get_param(state.QP_EPISODE)
    if eps.empty:
        st.title("Episode")
        st.info("The store is empty: load logs on the Ingest page first.")
        return
    if not episode_id:
        st.title("Episode")
        st.info("Pick an episode here or on the Runs page.")
        episode_picker(eps, "Episode")
        return
    view = data.episode_view(url, episode_id, settings.settings_hash, settings)
    if view is None:
        st.title("Episode")
        st.warning(f"There is no episode {escape_md(episode_id)!s} in this store.")
        episode_picker(eps, "Open another episode")
        return
    if not view.calls:
        header(view)
        st.warning("This episode has no recorded calls.")
        return
    call_ids = [c.call_id for c in view.calls]
    default_call = first_main_call(view)
    init_selection(episode_id, call_ids, default_call)
    if st.session_state.get(state.KEY_CALL_SELECT) not in call_ids:
        st.session_state[state.KEY_CALL_SELECT] = default_call
    state.set_params(call=st.session_state[state.KEY_CALL_SELECT])

    header(view)
    export_panel(
        url, settings, Selection(episode_ids=(episode_id,)), key="episode_export", scope=episode_id
    )
    st.page_link(
        WORKSPACE_PAGE,
        label="Workspace diff of this attempt",
        icon=":material/difference:",
        query_params={"episode": episode_id},
    )
    tree_section(view, call_ids)
    inspector(view, call_ids)
    paths_section(view)
    compare.compare_section(view, settings, on_change=on_compare_select)


run_page(__file__, main)
