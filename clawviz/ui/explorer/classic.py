"""The classic Episode view below the explorer: the Plotly call tree, and one section at a
time (the call inspector with one panel, the paths, or Compare), every choice in the URL. Moved
here from pages/episode.py so the page stays a short layout script; behaviour unchanged."""

from __future__ import annotations

import json

import streamlit as st

from clawviz.figures import (
    COLOUR_MODES,
    TREE_WINDOW,
    TreeLayout,
    call_from_selection,
    state_colour,
    tree_layout,
)
from clawviz.types import Call
from clawviz.ui import data, diff_view, sections, state
from clawviz.ui.decision_panel import call_decision
from clawviz.ui.figcache import tree_figure
from clawviz.ui.inspector import call_label, duration_s, escape_md, path_rows, role_reason_text
from clawviz.ui.render import render_message

KEY_PATH_SEEN = "episode_paths_seen"


def _select_call(cid: str | None) -> None:
    """One history entry per call picked, which shows the Call section; the episode is written
    too (it may be the remembered one, shown on a bare /episode)."""
    episode_id = st.session_state.get(state.KEY_EPISODE_LOADED)
    if cid:
        state.set_params(episode=episode_id, **sections.show_call_params(cid))


def on_tree_select() -> None:
    cid = call_from_selection(st.session_state.get(state.KEY_TREE))
    if cid:
        st.session_state[state.KEY_CALL_SELECT] = cid
        _select_call(cid)


def on_call_select() -> None:
    _select_call(st.session_state.get(state.KEY_CALL_SELECT))


def long_tree(layout: TreeLayout) -> bool:
    """Deeper than the Plotly tree's window (it would open on a stretch, with a range slider)."""
    return max((n.x for n in layout.nodes), default=0) > TREE_WINDOW


def _on_tree_open() -> None:
    state.set_params(**{state.QP_TREE: "1" if st.session_state.get(state.KEY_TREE_OPEN) else None})


def tree_section(view: data.EpisodeView, call_ids: list[str]) -> None:
    """The Plotly tree. A long episode's is in a section drawn only while it is open
    (`?tree=1`): on the 254-call bench episode it was about 2.2 s of the page's 4.5 s first
    paint (bench/README.md, "Episode page first paint: the Plotly tree on demand"), and the
    explorer above already shows that tree, windowed, with its minimap."""
    layout = tree_layout(view.calls, view.analysis)
    if not long_tree(layout):
        _tree(layout)
        return
    st.session_state[state.KEY_TREE_OPEN] = state.get_param(state.QP_TREE) == "1"
    box = st.expander(
        f"Plotly tree of all {len(view.calls):,} calls (colour by advantage or reward, the "
        "highlighted path, a range slider)",
        key=state.KEY_TREE_OPEN,
        on_change=_on_tree_open,
    )
    if box.open:
        with box:
            _tree(layout)


def _tree(layout: TreeLayout) -> None:
    c1, c2, c3 = st.columns([2, 2, 3])
    colour_by = (
        c1.segmented_control("Colour by", COLOUR_MODES, default="state", key=state.KEY_COLOUR_BY)
        or "state"
    )
    collapse = c2.toggle("Collapse auxiliary threads", key=state.KEY_COLLAPSE_AUX)
    path_id = state.get_param(state.QP_PATH)
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

    # One panel at a time (the URL's `panel=`), not tabs: every tab's content would be drawn.
    panel = sections.panel_control()
    if panel == sections.PANEL_REQUEST:
        diff_view.request_tab(call, parent, view)
    elif panel == sections.PANEL_RESPONSE:
        if call.response:
            render_message(call.response)
        else:
            st.info("No response was recorded for this call.")
    elif panel == sections.PANEL_TOKENS:
        from clawviz.ui import token_view

        token_view.tokens_tab(call, view)
    elif st.toggle("Load the raw request and response", key=state.KEY_RAW_JSON):
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
    import pandas as pd

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
