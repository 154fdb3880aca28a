"""Widgets shared by the Tasks and Workspace pages: keys, the checks heatmap, safe text, viewers.

Task and log text is untrusted: it only reaches the page through st.code, st.text, st.json,
dataframes, or Markdown with every special character escaped.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Literal

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from clawviz.review import (
    CheckerResult,
    CheckMatrix,
    csv_rows,
    extract_archive,
    highlight_lexer_name,
    is_archive,
    is_binary_bytes,
    is_csv,
)
from clawviz.ui import pages
from clawviz.ui.inspector import escape_md

TASKS_PAGE = pages.page_file(pages.TASKS)
WORKSPACE_PAGE = pages.page_file(pages.WORKSPACE)
EPISODE_PAGE = pages.page_file(pages.EPISODE)

# Query parameter of the Workspace page's selected file (episode/task names are in ui.state).
QP_FILE = "file"

# Widget keys: Tasks page.
KEY_QUEUE_TABLE = "tasks_queue_table"
KEY_QUEUE_CATEGORY = "tasks_filter_category"
KEY_QUEUE_STATUS = "tasks_filter_status"
KEY_QUEUE_VERDICT = "tasks_filter_verdict"
KEY_QUEUE_SORT = "tasks_sort"
KEY_TASK_PICK = "tasks_pick"
KEY_INPUT_FILE = "tasks_input_file"
KEY_CHECK_SOURCE = "tasks_check_source"
KEY_CHECK_ATTEMPT = "tasks_check_attempt"
KEY_CHECK_UPLOAD = "tasks_check_upload"
KEY_CHECK_RUN = "tasks_check_run"
KEY_CHECK_RESULT = "tasks_check_result"
"""Session state: {task_id: CheckerResult} of the last run per task."""
KEY_SIGNOFF_FORM = "tasks_signoff_form"
KEY_SIGNOFF_DECISION = "tasks_signoff_decision"
KEY_SIGNOFF_REVIEWER = "tasks_signoff_reviewer"
KEY_SIGNOFF_NOTE = "tasks_signoff_note"
KEY_REVIEWER_NAME = "reviewer_name"
"""Session state: the reviewer name typed once, remembered for this browser session."""
KEY_SIGNOFF_FLASH = "tasks_signoff_flash"

# Widget keys: Workspace page.
KEY_WS_EPISODE = "ws_episode_pick"
KEY_WS_FILE = "ws_file_pick"
KEY_WS_MODE = "ws_diff_mode"
KEY_WS_UNCHANGED = "ws_show_unchanged"
KEY_WS_TREE = "ws_tree_table"

VERDICT_TEXT = {True: "pass", False: "fail", None: "n/a"}
BadgeColour = Literal[
    "red", "orange", "yellow", "blue", "green", "violet", "gray", "grey", "primary"
]
"""The colours `st.badge` takes."""
VERDICT_COLOUR: dict[str, BadgeColour] = {"pass": "green", "fail": "red", "n/a": "gray"}
VERDICT_TINT = {"pass": "background-color: #e2f5e5", "fail": "background-color: #fde0dc"}
DECISION_COLOUR: dict[str, BadgeColour] = {
    "accept": "green",
    "revise": "orange",
    "reject": "red",
    "pending": "gray",
}


def escape_text(text: str) -> str:
    """Markdown that shows `text` literally, keeping its line breaks and paragraphs."""
    paragraphs = [p for p in text.replace("\r\n", "\n").split("\n\n")]
    return "\n\n".join("  \n".join(escape_md(line) for line in p.split("\n")) for p in paragraphs)


def fmt_score(v: float | None) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def verdict_badge(passed: bool | None) -> str:
    """Markdown badge for a filter verdict (pass / fail / n/a)."""
    text = VERDICT_TEXT[passed]
    return f":{VERDICT_COLOUR[text]}-badge[{text}]"


def check_heatmap(matrix: CheckMatrix, labels: dict[str, str] | None = None) -> go.Figure:
    """Checks x attempts scores: red 0, green 1, grey where an attempt has no such check."""
    labels = labels or {}
    x = [labels.get(a, a) for a in matrix.attempts]
    z = [[None if v is None else float(v) for v in row] for row in matrix.values]
    text = [["—" if v is None else f"{v:.2f}" for v in row] for row in matrix.values]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=x,
            y=matrix.checks,
            text=text,
            texttemplate="%{text}" if len(matrix.attempts) * len(matrix.checks) <= 400 else None,
            zmin=0.0,
            zmax=1.0,
            colorscale=[[0.0, "#d73027"], [0.5, "#fee08b"], [1.0, "#1a9850"]],
            colorbar={"title": "score", "thickness": 12},
            hovertemplate="check %{y}<br>attempt %{x}<br>score %{z}<extra></extra>",
            xgap=2,
            ygap=2,
        )
    )
    fig.update_layout(
        height=max(220, 60 + 26 * len(matrix.checks)),
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        plot_bgcolor="#eeeeee",
        xaxis={"tickangle": -30, "type": "category"},
        yaxis={"autorange": "reversed", "type": "category"},
    )
    return fig


def scores_table(scores: dict[str, float]) -> None:
    """Per-check scores with the failed ones (score < 1) highlighted."""
    if not scores:
        st.caption("No per-check scores recorded.")
        return
    df = pd.DataFrame(
        {
            "result": ["pass" if v >= 1.0 else "FAIL" for v in scores.values()],
            "check": list(scores),
            "score": list(scores.values()),
        }
    )

    def tint(row: pd.Series) -> list[str]:
        colour = "background-color: #fde0dc" if row["score"] < 1.0 else ""
        return [colour] * len(row)

    st.dataframe(
        df.style.apply(tint, axis=1).format({"score": "{:.2f}"}),
        hide_index=True,
        width="stretch",
    )


def checker_result(res: CheckerResult) -> None:
    """A checker run: verdict, reward, per-check scores, captured output."""
    if res.warning:
        st.warning(escape_md(res.warning), icon=":material/gpp_maybe:")
    if res.status == "ok":
        solvable = res.reward is not None and res.reward >= 1.0
        st.success(
            f"Checker ran in {res.duration:.1f} s: reward {fmt_score(res.reward)}"
            + (" — verifiably solvable with this workspace." if solvable else ".")
        )
    elif res.status == "timeout":
        st.error(f"Timeout: {escape_md(res.message)}")
    elif res.status == "crash":
        st.error(f"Crash: {escape_md(res.message)}")
    else:
        st.warning(f"Bad output: {escape_md(res.message)}")
    if res.scores:
        scores_table(res.scores)
    with st.expander(f"stdout ({len(res.stdout)} chars)", expanded=res.status == "bad_output"):
        st.code(res.stdout or "(empty)", language=None, wrap_lines=True)
    with st.expander(f"stderr ({len(res.stderr)} chars)", expanded=res.status == "crash"):
        st.code(res.stderr or "(empty)", language=None, wrap_lines=True)


def file_viewer(name: str, data: bytes, truncated: bool) -> None:
    """One file, shown by kind: CSV as a table, binary as a notice, text highlighted."""
    if truncated:
        st.caption(f"Large file: only the first {len(data)} bytes are shown.")
    if is_binary_bytes(data):
        st.info(f"Binary file ({len(data)} bytes shown), not displayed.")
        return
    text = data.decode("utf-8", "replace")
    if is_csv(name):
        rows = csv_rows(text)
        if rows:
            header, body = rows[0], rows[1:]
            width = max(len(r) for r in rows)
            header = [h or f"col{i}" for i, h in enumerate(header + [""] * (width - len(header)))]
            header = [h if header.count(h) == 1 else f"{h}_{i}" for i, h in enumerate(header)]
            body = [r + [""] * (width - len(r)) for r in body]
            st.dataframe(pd.DataFrame(body, columns=header), hide_index=True)
            return
    st.code(text, language=highlight_lexer_name(name), line_numbers=True)


def file_tree_text(paths: list[str]) -> str:
    """An indented text tree of relative paths."""
    lines: list[str] = []
    seen: set[str] = set()
    for p in paths:
        parts = p.split("/")
        for i in range(len(parts) - 1):
            d = "/".join(parts[: i + 1])
            if d not in seen:
                seen.add(d)
                lines.append("  " * i + parts[i] + "/")
        lines.append("  " * (len(parts) - 1) + parts[-1])
    return "\n".join(lines)


@st.cache_resource(max_entries=8, show_spinner="Extracting workspace archive…")
def _extracted(path: str, mtime: float) -> tempfile.TemporaryDirectory:
    """An archive extracted once per (path, mtime); the folder goes when the cache drops it."""
    tmp = tempfile.TemporaryDirectory(prefix="clawviz-ws-")
    extract_archive(path, tmp.name)
    return tmp


def workspace_folder(path: str | None) -> Path | None:
    """A readable folder for a workspace path (archives extracted safely, cached)."""
    if not path:
        return None
    p = Path(path)
    if p.is_dir():
        return p
    if not p.exists():
        raise FileNotFoundError(f"workspace not found: {path}")
    if not is_archive(p):
        raise ValueError(f"{p.name}: neither a folder nor a supported archive")
    return Path(_extracted(str(p), os.path.getmtime(p)).name)
