"""The Request panel of the call inspector: the call diffed against its parent, then its messages.

The diff (`clawviz.recon.calldiff`) is drawn as HTML in which every piece of log text goes
through `html.escape` (`section_html` is pure and tested with hostile strings); st.html also
sanitises what it is given.
"""

from __future__ import annotations

import html

import streamlit as st

from clawviz.recon import CallDiff, DiffLine, SectionDiff, call_diff
from clawviz.types import Call, call_label
from clawviz.ui import data, state
from clawviz.ui.inspector import escape_md, ignored_for_matching, message_delta
from clawviz.ui.render import render_message

MAX_SHARED_SHOWN = 30
"""The shared history is long; its expander shows the last messages only."""
MAX_DIFF_LINES = 4000
"""Lines drawn per section (a longer diff is cut with a note; the Raw JSON panel has it all)."""
KEY_FOLD = "episode_fold_"
"""Prefix of the folded sections' keys (stateful expanders: see `folded`)."""

_STYLE = {
    "add": ("#e6ffec", "#1a7f37", "+"),
    "del": ("#ffebe9", "#cf222e", "−"),
    "same": ("transparent", "#57606a", " "),
    "ignored": ("#f3f0ff", "#6639ba", "~"),
}
_BOX = (
    "font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; "
    "line-height: 1.45; border: 1px solid #d0d7de; border-radius: 6px; max-height: 560px; "
    "overflow: auto; background: #ffffff"
)
_NO = "flex: none; width: 3.4em; text-align: right; color: #8c959f; padding-right: 8px"


def _row(d: DiffLine, note_rule: bool) -> str:
    """One diff line; `note_rule` names the matching rule (on the first line of its run)."""
    if d.kind == "fold":
        return (
            '<div style="background: #f6f8fa; color: #57606a; padding: 2px 12px; '
            'font-style: italic; border-top: 1px solid #eaeef2; border-bottom: 1px solid #eaeef2">'
            f"… {d.folded:,} unchanged line{'s' if d.folded != 1 else ''} …</div>"
        )
    bg, fg, mark = _STYLE["ignored" if d.ignored else d.kind]
    if d.ignored:
        mark = "~" + ("+" if d.kind == "add" else "−")
    old = "" if d.old_no is None else str(d.old_no)
    new = "" if d.new_no is None else str(d.new_no)
    note = (
        '<span style="flex: none; color: #6639ba; padding: 0 8px; font-style: italic">'
        f"ignored for matching: {html.escape(d.ignored)}</span>"
        if d.ignored and note_rule
        else ""
    )
    text = html.escape(d.text) or "&nbsp;"
    return (
        f'<div style="display: flex; background: {bg}">'
        f'<span style="{_NO}">{old}</span><span style="{_NO}">{new}</span>'
        f'<span style="flex: none; width: 1.6em; color: {fg}; font-weight: 600">{mark}</span>'
        '<span style="flex: 1; min-width: 0; white-space: pre-wrap; word-break: break-word; '
        f'color: #1f2328">{text}</span>{note}</div>'
    )


def section_html(section: SectionDiff, max_lines: int = MAX_DIFF_LINES) -> str:
    """One section diff as escaped HTML: coloured added / removed / ignored rows, folds."""
    rows = []
    shown = section.lines[:max_lines]
    for i, d in enumerate(shown):
        prev = shown[i - 1] if i else None
        first_of_run = prev is None or prev.ignored != d.ignored or prev.kind != d.kind
        rows.append(_row(d, first_of_run))
    if len(section.lines) > max_lines:
        rows.append(
            f'<div style="padding: 4px 12px; color: #9a6700">… {len(section.lines) - max_lines:,}'
            " more diff lines not drawn (see the Raw JSON tab) …</div>"
        )
    return f'<div style="{_BOX}">{"".join(rows)}</div>'


def section_summary(section: SectionDiff) -> str:
    """`+3 −1 lines, 4 ignored for matching` or `unchanged (812 lines)`."""
    if not section.changed and not section.ignored:
        return f"unchanged ({section.new_lines:,} lines)"
    parts = []
    if section.changed:
        parts.append(f"+{section.added:,} −{section.removed:,} lines")
    if section.ignored:
        parts.append(f"{section.ignored:,} ignored for matching")
    return ", ".join(parts)


def folded(label: str, name: str, call_id: str, *, expanded: bool = False):
    """An expander whose content the caller draws only while it is open (`.open`): Streamlit
    sends a closed expander's content to the browser all the same, and a system prompt or 30
    shared messages are most of what the inspector would lay out. Opening it reruns the page.
    Keyed per call, so each call starts with its own default."""
    return st.expander(
        label, expanded=expanded, key=f"{KEY_FOLD}{name}_{call_id}", on_change="rerun"
    )


@st.cache_data(show_spinner=False, max_entries=256)
def _tool_defs(url: str, call_id: str) -> list | None:
    raw = data.raw_call(url, call_id)
    tools = (raw or {}).get("request", {}).get("tools")
    return tools if isinstance(tools, list) else None


def call_vs_parent(call: Call, parent: Call, view: data.EpisodeView) -> CallDiff:
    """The diff of `call` against `parent` with both decisions' ignored parts."""
    decisions = view.analysis.decisions if view.analysis else {}
    d, pd_ = decisions.get(call.call_id), decisions.get(parent.call_id)
    url = state.database_url()
    return call_diff(
        call,
        parent,
        call_ignored=d.match_ignored if d else (),
        parent_ignored=pd_.match_ignored if pd_ else (),
        call_tools=_tool_defs(url, call.call_id),
        parent_tools=_tool_defs(url, parent.call_id),
    )


def diff_section(call: Call, parent: Call, view: data.EpisodeView) -> None:
    """Changes since the parent: system prompt, tools and messages, each folded and coloured."""
    diff = call_vs_parent(call, parent, view)
    st.markdown(f"**Changes since the parent, call {escape_md(call_label(parent))}**")
    st.caption(
        "The parent side is the parent's request plus its reply. Green lines were added, red "
        "removed; violet lines (~) changed too, but tree matching ignored them (the rule is "
        "named on the line); long unchanged runs are folded."
    )
    titles = {"system prompt": "System prompt", "tools": "Tools", "messages": "Messages"}
    for section in diff.sections:
        label = f"{titles[section.name]}: {section_summary(section)}"
        box = folded(
            label,
            f"diff_{section.name}",
            call.call_id,
            expanded=section.changed or section.name == "messages",
        )
        if box.open:
            with box:
                st.html(section_html(section))


def request_tab(call: Call, parent: Call | None, view: data.EpisodeView) -> None:
    """The Request panel: the diff against the parent, what matching ignored, the messages."""
    if parent is not None:
        diff_section(call, parent, view)
    box = folded(f"System prompt ({len(call.system):,} characters)", "system", call.call_id)
    if box.open:
        with box:
            st.text(call.system or "(none)")
    if call.tools:
        st.caption("Tools offered: " + escape_md(", ".join(call.tools)))
    decision = view.analysis.decisions.get(call.call_id) if view.analysis else None
    ignored = ignored_for_matching(decision)
    if ignored:
        box = folded(
            f"Ignored for matching: {len(ignored)} part(s) of this request", "ignored", call.call_id
        )
        if box.open:
            with box:
                st.caption(
                    "The tree matched this request on what the harness keeps of it: these parts "
                    "were left out or read in their kept form (message numbers count from 1)."
                )
                st.dataframe(ignored, hide_index=True, width="stretch")
    delta = message_delta(call, parent)
    if delta.shared:
        n = len(delta.shared)
        pnum = escape_md(call_label(parent)) if parent else "?"
        box = folded(f"{n} messages same as parent (call {pnum})", "shared", call.call_id)
        if box.open:
            with box:
                start = max(0, n - MAX_SHARED_SHOWN)
                if start:
                    st.caption(f"Showing the last {MAX_SHARED_SHOWN} of {n}.")
                for i in range(start, n):
                    render_message(delta.shared[i], i)
    elif parent is None:
        st.caption("No parent call: every message is new.")
    if not delta.new:
        st.info("No new messages since the parent (a re-send of the same request).")
    elif parent is not None:
        st.markdown(f"**New since the parent: {len(delta.new)} message(s)**")
    for i, m in enumerate(delta.new):
        render_message(m, len(delta.shared) + i)
