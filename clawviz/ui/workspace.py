"""The Workspace diff page's logic (`pages/workspace.py` is its layout): what an attempt
changed, file by file, beside its per-check scores.

Deep link: ?episode=<episode id>&file=<path>.
"""

from __future__ import annotations

import json
import os
from functools import partial

import pandas as pd
import streamlit as st

from clawviz.review import (
    STATUS_MARKER,
    STATUSES,
    ArchiveError,
    AttemptWorkspaces,
    FileDiff,
    WorkspaceDiff,
    attempt_workspaces,
    attempts_with_workspaces,
    csv_rows,
    diff_workspaces,
    file_diff,
    is_csv,
    tree_rows,
)
from clawviz.ui import state
from clawviz.ui import tasks_widgets as w
from clawviz.ui.inspector import escape_md

MODES = {"unified": "Unified", "side_by_side": "Side by side"}
ROW_TINT = {"replace": "#fff3cd", "delete": "#fde0dc", "insert": "#e2f5e5"}


@st.cache_data(show_spinner=False, max_entries=32)
def load_diff(before: str | None, after: str | None, stamp: tuple) -> WorkspaceDiff:
    """Diff two folders; `stamp` (source modification times) renews the cache entry."""
    return diff_workspaces(before, after)


def _stamp(*paths: str | None) -> tuple:
    return tuple(os.path.getmtime(p) if p and os.path.exists(p) else None for p in paths)


def on_episode_pick() -> None:
    choice = st.session_state.get(w.KEY_WS_EPISODE)
    state.set_params(episode=None if choice == state.NONE_OPTION else choice, file=None)
    st.session_state.pop(w.KEY_WS_FILE, None)


def on_file_pick() -> None:
    state.set_params(file=st.session_state.get(w.KEY_WS_FILE))


def on_tree_select(row_paths: list[str | None]) -> None:
    """A click on a file row of the tree opens that file."""
    event = st.session_state.get(w.KEY_WS_TREE)
    rows = event.selection.rows if event is not None else []
    if rows and row_paths[rows[0]]:
        st.session_state[w.KEY_WS_FILE] = row_paths[rows[0]]
        state.set_params(file=row_paths[rows[0]])


def picker(options: list[str], current: str | None) -> None:
    if current and current not in options:
        options = [current] + options
    if w.KEY_WS_EPISODE not in st.session_state:
        st.session_state[w.KEY_WS_EPISODE] = current or state.NONE_OPTION
    st.selectbox(
        "Attempt (episode)",
        [state.NONE_OPTION] + options,
        key=w.KEY_WS_EPISODE,
        on_change=on_episode_pick,
        help="Attempts whose results name an after-workspace.",
    )


def counts_bar(diff: WorkspaceDiff) -> None:
    cols = st.columns(len(STATUSES))
    for col, status in zip(cols, STATUSES, strict=True):
        col.metric(f"{STATUS_MARKER[status]} {status}", diff.counts.get(status, 0))


def file_tree(diff: WorkspaceDiff) -> list[str]:
    """The tree with markers; returns the file paths the picker offers."""
    show_unchanged = st.toggle("Show unchanged files", key=w.KEY_WS_UNCHANGED)
    rows = tree_rows(diff, include_unchanged=show_unchanged)
    table = pd.DataFrame(
        [
            {
                "": r.marker,
                "file": "\u2003" * r.depth + r.name,
                "change": _dir_summary(r.counts) if r.is_dir else _change(diff, r.path),
            }
            for r in rows
        ],
        columns=["", "file", "change"],
    )
    if table.empty:
        st.caption("No changed files." if not show_unchanged else "Both workspaces are empty.")
        return []
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        height=min(560, 38 + 35 * len(table)),
        key=w.KEY_WS_TREE,
        column_config={
            "": st.column_config.TextColumn(width=28),
            "file": st.column_config.TextColumn(width="medium"),
            "change": st.column_config.TextColumn(width="small"),
        },
        on_select=partial(on_tree_select, [None if r.is_dir else r.path for r in rows]),
        selection_mode="single-row",
    )
    return [r.path for r in rows if not r.is_dir]


def _change(diff: WorkspaceDiff, path: str) -> str:
    e = diff.entry(path)
    if e is None:
        return ""
    if e.status == "modified":
        return f"+{e.lines_added} −{e.lines_removed}"
    return f"{e.status} (binary)" if e.is_binary and e.status != "binary" else e.status


def _dir_summary(counts: dict[str, int]) -> str:
    parts = [f"{v}{STATUS_MARKER[k]}" for k, v in counts.items() if v and k != "unchanged"]
    return " ".join(parts) or "unchanged"


def side_by_side(fd: FileDiff) -> None:
    df = pd.DataFrame(
        [
            {
                "#": "" if r.left_no is None else str(r.left_no),
                "before": r.left,
                "# ": "" if r.right_no is None else str(r.right_no),
                "after": r.right,
                "kind": r.kind,
            }
            for r in fd.rows
        ]
    )
    if df.empty:
        st.caption("Both sides are empty.")
        return

    def tint(row: pd.Series) -> list[str]:
        colour = ROW_TINT.get(row["kind"])
        return [f"background-color: {colour}" if colour else ""] * len(row)

    st.dataframe(
        df.style.apply(tint, axis=1),
        hide_index=True,
        width="stretch",
        column_config={
            "#": st.column_config.TextColumn(width=40),
            "# ": st.column_config.TextColumn(width=40),
            "kind": st.column_config.TextColumn(width="small"),
        },
        height=min(700, 38 + 35 * len(df)),
    )


def _file_label(diff: WorkspaceDiff, path: str) -> str:
    """A file picker option: its change marker, then its path (every option is in the diff)."""
    entry = diff.entry(path)
    return f"{entry.marker if entry else ''}  {path}"


def show_file(diff: WorkspaceDiff, path: str) -> None:
    entry = diff.entry(path)
    if entry is None:
        st.warning(f"No file {escape_md(path)} in either workspace.")
        return
    st.subheader(f"{entry.marker} {escape_md(path)}", anchor=False)
    st.caption(f"status: {entry.status}")
    mode = st.segmented_control(
        "View", list(MODES), format_func=MODES.__getitem__, key=w.KEY_WS_MODE, default="unified"
    )
    fd = file_diff(entry, mode="side_by_side" if mode == "side_by_side" else "unified")
    if fd.notice:
        (st.info if fd.binary else st.warning)(fd.notice)
    if fd.binary:
        return
    if fd.mode == "unified":
        if fd.unified:
            st.code(fd.unified, language="diff", wrap_lines=True)
        else:
            st.caption("No differences.")
    else:
        side_by_side(fd)
    tabs = [t for t, text in (("Before", fd.before_text), ("After", fd.after_text)) if text]
    if not tabs:
        return
    with st.expander(f"Full file ({fd.language})", expanded=entry.status == "unchanged"):
        for tab, label in zip(st.tabs(tabs), tabs, strict=True):
            text = fd.before_text if label == "Before" else fd.after_text
            with tab:
                if is_csv(path):
                    rows = csv_rows(text or "")
                    if rows and len(rows) > 1 and len(set(rows[0])) == len(rows[0]):
                        width = len(rows[0])
                        body = [(r + [""] * width)[:width] for r in rows[1:]]
                        st.dataframe(pd.DataFrame(body, columns=rows[0]), hide_index=True)
                        continue
                if path.lower().endswith(".json"):
                    try:
                        st.json(json.loads(text or ""), expanded=2)
                        continue
                    except ValueError:
                        pass
                st.code(text or "", language=fd.language, line_numbers=True)


def checks_panel(ws: AttemptWorkspaces) -> None:
    a = ws.attempt
    st.subheader("Checks", anchor=False)
    st.metric("reward", w.fmt_score(a.reward))
    st.caption(
        " · ".join(
            escape_md(str(x))
            for x in (a.harness, a.model, a.model_role, f"attempt {a.attempt}")
            if x is not None
        )
    )
    if a.checks:
        failed = a.failed_checks
        st.caption(f"{len(failed)} of {len(a.checks)} checks failed" if failed else "All passed")
    w.scores_table(a.checks)
    if ws.task is not None:
        with st.expander("Task instruction"):
            st.markdown(w.escape_text(ws.task.instruction or "(no instruction)"))
        st.page_link(
            w.TASKS_PAGE,
            label=f"Task {escape_md(ws.task.task_id)}",
            icon=":material/task:",
            query_params={state.QP_TASK: ws.task.task_id},
        )
    elif a.task_id:
        st.caption(f"Task {escape_md(a.task_id)} is not loaded (ingest its folder).")
    if a.has_calls:
        st.page_link(
            w.EPISODE_PAGE,
            label="Episode tree",
            icon=":material/account_tree:",
            query_params={state.QP_EPISODE: a.episode_id},
        )


def attempt_view(episode_id: str | None) -> None:
    """The page below its title: the attempt picker, then the attempt's files, the chosen
    file's diff and its checks (or why there is nothing to compare)."""
    with state.get_session() as session:
        options = attempts_with_workspaces(session)
        settings = state.current_settings()
        ws = attempt_workspaces(session, episode_id, settings) if episode_id else None
    picker(options, episode_id)
    if not episode_id:
        st.info("Choose an attempt to compare its workspace before and after the run.")
        return
    if ws is None:
        st.warning(f"There is no attempt {escape_md(episode_id)} in this store.")
        return
    if ws.after is None:
        st.warning(
            "This attempt records no final workspace (its results.jsonl line has no "
            "workspace_after), so there is nothing to compare."
        )
        checks_panel(ws)
        return
    try:
        before = w.workspace_folder(ws.before)
        after = w.workspace_folder(ws.after)
    except (ArchiveError, OSError, ValueError) as exc:
        st.error(f"Cannot open the workspace: {escape_md(str(exc))}")
        checks_panel(ws)
        return
    diff = load_diff(
        str(before) if before else None,
        str(after) if after else None,
        _stamp(ws.before, ws.after),
    )
    st.caption(
        f"before: {escape_md(ws.before or 'none')} ({escape_md(ws.before_label)})  \n"
        f"after: {escape_md(ws.after or 'none')}"
    )
    counts_bar(diff)
    left, middle, right = st.columns([1.4, 2.6, 1.3], gap="medium")
    with left:
        st.subheader("Files", anchor=False)
        paths = file_tree(diff)
    with right:
        checks_panel(ws)
    with middle:
        if not paths:
            st.caption("Nothing to show.")
            return
        wanted = state.get_param(w.QP_FILE)
        if st.session_state.get(w.KEY_WS_FILE) not in paths:
            changed = [e.path for e in diff.changed if e.path in paths]
            st.session_state[w.KEY_WS_FILE] = (
                wanted if wanted in paths else (changed[0] if changed else paths[0])
            )
        st.selectbox(
            "File",
            paths,
            key=w.KEY_WS_FILE,
            on_change=on_file_pick,
            format_func=partial(_file_label, diff),
        )
        # No URL write on a plain run (it would push a history entry); the pick callbacks write.
        show_file(diff, st.session_state[w.KEY_WS_FILE])
