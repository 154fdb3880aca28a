"""Compare two episodes: kept paths turn by turn, final answers and final workspaces diffed.

The pure parts are `clawviz.recon.align` (turns, alignment, candidate order) and
`clawviz.review.workspace` (the workspace diff); this module only renders them. The other
episode is named in the URL (`?compare=`), and a button opens the other one in
the same tab (sides swapped).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable

import pandas as pd
import streamlit as st

from clawviz.figures import call_from_selection, tree_figure, tree_layout
from clawviz.recon import GROUPS, Comparison, TurnPair, compare, compare_order
from clawviz.review import (
    ArchiveError,
    WorkspaceDiff,
    attempt_workspaces,
    diff_workspaces,
    file_diff,
)
from clawviz.settings import Settings
from clawviz.ui import data, sections, state
from clawviz.ui.diff_view import section_html
from clawviz.ui.inspector import escape_md
from clawviz.ui.pages import WORKSPACE, page_file
from clawviz.ui.render import reason_badges
from clawviz.ui.tasks_widgets import workspace_folder

WORKSPACE_PAGE = page_file(WORKSPACE)
KEY_COMPARE_FILE = "episode_compare_file"
KEY_OPEN_PREFIX = "episode_compare_open_"
VERDICT_TINT = {
    "same": "",
    "other arguments": "background-color: #fff8c5",
    "different": "background-color: #ffebe9",
    "only left": "background-color: #f6f8fa",
    "only right": "background-color: #f6f8fa",
}


def _fmt(v, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _option_label(row: dict, group: str) -> str:
    attempt = row.get("attempt")
    attempt_text = f"attempt {attempt}" if attempt is not None and not pd.isna(attempt) else ""
    parts = [
        str(row["episode_id"]),
        str(row.get("task_id") or "no task"),
        str(row.get("harness") or "?"),
        attempt_text,
        f"R {_fmt(row.get('reward'))}",
        str(row.get("status") or ""),
    ]
    return f"{group}: " + " · ".join(p for p in parts if p)


def picker(view: data.EpisodeView, eps: pd.DataFrame, on_change: Callable[[], None]) -> str | None:
    """The other episode (nearest first); None when nothing is picked."""
    rows = {str(r["episode_id"]): r for r in eps.to_dict("records")}
    order = compare_order(view.episode, rows.values())
    labels = {c.episode_id: _option_label(rows[c.episode_id], c.group) for c in order}
    options = [state.NONE_OPTION] + list(labels)
    if st.session_state.get(state.KEY_COMPARE_SELECT) not in options:
        st.session_state[state.KEY_COMPARE_SELECT] = state.NONE_OPTION
        state.set_params(compare=None, section=sections.SECTION_COMPARE)
    counts = {g: sum(1 for c in order if c.group == g) for g in GROUPS}
    choice = st.selectbox(
        "Other episode",
        options,
        format_func=lambda e: labels.get(e, e),
        key=state.KEY_COMPARE_SELECT,
        on_change=on_change,
        help="Nearest first: "
        + "; ".join(f"{g} ({n})" for g, n in counts.items())
        + ". Type to search by id, task or harness.",
    )
    return None if choice == state.NONE_OPTION else choice


def open_compared(episode_id: str, other_id: str) -> None:
    """Button callback: show `episode_id` compared with `other_id` (one URL write, one history
    entry; the call and path named belong to the episode left behind)."""
    _show(episode_id, other_id, None, sections.SECTION_COMPARE)


def _show(episode_id: str, other_id: str, call_id: str | None, section: str) -> None:
    """One URL write: `episode_id` compared with `other_id`, `call_id` inspected, in `section`."""
    state.set_params(
        episode=episode_id,
        compare=other_id,
        call=call_id,
        path=None,
        section=sections.section_value(section, other_id),
    )


def _episode_column(v: data.EpisodeView, other_id: str, side: str) -> None:
    a = v.analysis
    eid = v.episode["episode_id"]
    # A button, not st.page_link: Streamlit 1.67's frontend sends a page link to the page already
    # shown as a rerun with the link's query string but never writes it to the address bar
    # (`maybeUpdatePageUrl` only pushes on a page change), so the next rerun read the old URL
    # back. The callback's one `set_params` is pushed as one history entry.
    shown = side == "Left"
    st.button(
        f"{side}: {eid}",
        key=f"{KEY_OPEN_PREFIX}{side.lower()}",
        icon=":material/account_tree:",
        disabled=shown,
        on_click=open_compared,
        args=(eid, other_id),
        help="The episode shown on this page."
        if shown
        else f"Open {eid} here, compared with {other_id}.",
    )
    st.caption(
        " · ".join(
            escape_md(str(x))
            for x in (v.episode.get("task_id"), v.episode.get("harness"), v.episode.get("model"))
            if x
        )
    )
    m = st.columns(3)
    m[0].metric("Reward", _fmt(v.reward))
    m[1].metric("Advantage", _fmt(a.advantage if a else None, True))
    m[2].metric("Status", a.status if a else "not analysed")
    if a is not None:
        reason_badges(a.reasons)


ALIGNMENT_COLUMNS = [
    "turn",
    "left call",
    "left tools",
    "right call",
    "right tools",
    "verdict",
    "left text",
    "right text",
]
"""Tools side by side first; the replies' text after the verdict."""


def alignment_frame(pairs: list[TurnPair]) -> pd.DataFrame:
    """One row per turn: both calls, their tool calls (name + arguments) and the verdict."""

    def tools(t) -> str:
        if t is None:
            return "—"
        return "; ".join(str(x) for x in t.tools) or "(no tool call)"

    return pd.DataFrame(
        [
            {
                "turn": p.number,
                "left call": p.left.label if p.left else "—",
                "left tools": tools(p.left),
                "right call": p.right.label if p.right else "—",
                "right tools": tools(p.right),
                "verdict": p.verdict,
                "left text": p.left.text if p.left else "",
                "right text": p.right.text if p.right else "",
            }
            for p in pairs
        ],
        columns=ALIGNMENT_COLUMNS,
    )


def alignment_table(cmp: Comparison) -> None:
    st.markdown("**Kept paths, turn by turn**")
    if not cmp.pairs:
        st.info("Neither episode has a kept path to align.")
        return
    first = cmp.first_difference
    st.caption(
        f"Left {len(cmp.left)} turns, right {len(cmp.right)}; turn N of one stands beside turn "
        "N of the other (main-path call order). "
        + (
            f"They first part ways at turn {first}."
            if first is not None
            else "Every turn calls the same tools with the same arguments."
        )
    )
    df = alignment_frame(cmp.pairs)

    def tint(row: pd.Series) -> list[str]:
        return [VERDICT_TINT.get(row["verdict"], "")] * len(row)

    st.dataframe(
        df.style.apply(tint, axis=1),
        hide_index=True,
        width="stretch",
        key="episode_compare_alignment",
        height=min(600, 38 + 35 * len(df)),
        column_config={
            "turn": st.column_config.NumberColumn(width=45, pinned=True),
            "left call": st.column_config.TextColumn(width=70),
            "right call": st.column_config.TextColumn(width=70),
            "left tools": st.column_config.TextColumn(width=350),
            "right tools": st.column_config.TextColumn(width=350),
            "verdict": st.column_config.TextColumn(width=170),
        },
    )


def final_answers(cmp: Comparison) -> None:
    st.markdown("**Final answers** (the last assistant text of each kept path)")
    left, right = st.columns(2)
    for col, text, side in ((left, cmp.left_answer, "Left"), (right, cmp.right_answer, "Right")):
        with col:
            st.caption(side)
            if text:
                st.text(text)
            else:
                st.caption("(no assistant text on the kept path)")
    if cmp.left_answer or cmp.right_answer:
        if cmp.answer_diff.changed:
            st.caption("Diff, left to right:")
            st.html(section_html(cmp.answer_diff))
        else:
            st.caption("The two final answers are the same.")


@st.cache_data(show_spinner=False, max_entries=16)
def _workspace_diff(left: str, right: str, stamp: tuple) -> WorkspaceDiff:
    return diff_workspaces(left, right)


def _after_folder(episode_id: str, settings: Settings) -> tuple[str | None, str]:
    """The final workspace folder of an episode, or None and why not."""
    with state.get_session() as session:
        ws = attempt_workspaces(session, episode_id, settings)
    if ws is None or ws.after is None:
        return None, f"{episode_id} records no final workspace"
    try:
        folder = workspace_folder(ws.after)
    except (ArchiveError, OSError, ValueError) as exc:
        return None, f"{episode_id}: {exc}"
    return (str(folder) if folder else None), ws.after


def workspaces(left_id: str, right_id: str, settings: Settings) -> None:
    st.markdown("**Final workspaces** (left's after-workspace against right's)")
    lf, lwhy = _after_folder(left_id, settings)
    rf, rwhy = _after_folder(right_id, settings)
    if lf is None or rf is None:
        st.info(
            "No workspace diff: "
            + escape_md("; ".join(w for f, w in ((lf, lwhy), (rf, rwhy)) if f is None))
            + "."
        )
        return
    stamp = tuple(os.path.getmtime(p) for p in (lf, rf))
    diff = _workspace_diff(lf, rf, stamp)
    changed = diff.changed
    counts = {k: v for k, v in diff.counts.items() if v}
    st.caption(
        " · ".join(f"{k} {v}" for k, v in counts.items())
        + " (added = only in the right workspace, removed = only in the left)"
    )
    links = st.container(horizontal=True)
    for eid in (left_id, right_id):
        links.page_link(
            WORKSPACE_PAGE,
            label=f"Workspace of {eid}",
            icon=":material/difference:",
            query_params={state.QP_EPISODE: eid},
        )
    if not changed:
        st.success("Both attempts ended with the same files.")
        return
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "file": e.path,
                    "status": e.status,
                    "lines": f"+{e.lines_added} −{e.lines_removed}"
                    if e.status == "modified"
                    else "",
                }
                for e in changed
            ]
        ),
        hide_index=True,
        width="stretch",
        height=min(320, 38 + 35 * len(changed)),
    )
    paths = [e.path for e in changed]
    if st.session_state.get(KEY_COMPARE_FILE) not in paths:
        st.session_state[KEY_COMPARE_FILE] = paths[0]
    path = st.selectbox("File", paths, key=KEY_COMPARE_FILE)
    entry = diff.entry(path)
    if entry is None:
        return
    fd = file_diff(entry)
    if fd.notice:
        (st.info if fd.binary else st.warning)(fd.notice)
    if fd.unified:
        text = fd.unified.replace("--- before/", f"--- {left_id}/", 1).replace(
            "+++ after/", f"+++ {right_id}/", 1
        )
        st.code(text, language="diff", wrap_lines=True)


def tree_key(side: str) -> str:
    return f"episode_compare_{side}"


def on_tree_pick(side: str, episode_id: str, other_id: str) -> None:
    """A click on a node of one of the two trees inspects that call in its own episode, which is
    then compared with the other one (so Back, or the Compare section, returns here)."""
    cid = call_from_selection(st.session_state.get(tree_key(side)))
    if cid:
        _show(episode_id, other_id, cid, sections.SECTION_CALL)


def trees(view: data.EpisodeView, other: data.EpisodeView) -> None:
    with st.expander("Both trees"):
        st.caption("Click a node to inspect that call in its own episode.")
        left, right = st.columns(2)
        pair = ((left, view, other, "left"), (right, other, view, "right"))
        for col, v, o, side in pair:
            with col:
                me, them = v.episode["episode_id"], o.episode["episode_id"]
                st.caption(escape_md(me))
                fig = tree_figure(tree_layout(v.calls, v.analysis), collapse_aux=True, height=320)
                fig.update_layout(showlegend=False)
                st.plotly_chart(
                    fig,
                    key=tree_key(side),
                    on_select=functools.partial(on_tree_pick, side, me, them),
                    selection_mode="points",
                    config={"displaylogo": False},
                )


def compare_section(
    view: data.EpisodeView, settings: Settings, *, on_change: Callable[[], None]
) -> None:
    """The Compare section of the Episode page (`on_change`: the picker's URL callback)."""
    st.subheader("Compare with another episode")
    url = state.database_url()
    eps = data.episodes(url, settings.settings_hash)
    if len(eps) < 2:
        st.info("There is no other episode in the store to compare with.")
        return
    choice = picker(view, eps, on_change)
    if choice is None:
        return
    other = data.episode_view(url, choice, settings.settings_hash, settings)
    if other is None:
        st.warning("That episode is no longer in the store.")
        return
    me = view.episode["episode_id"]
    left, right = st.columns(2)
    with left:
        _episode_column(view, choice, "Left")
    with right:
        _episode_column(other, me, "Right")
    cmp = compare(view.calls, view.analysis, other.calls, other.analysis)
    alignment_table(cmp)
    final_answers(cmp)
    workspaces(me, choice, settings)
    trees(view, other)
