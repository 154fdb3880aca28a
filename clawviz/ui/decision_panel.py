"""The episode's decision where it happens: why it is dropped (header), and per call what it caused,
what it retries, what replaced it and which path beat its branch (call inspector).

Calls are named by their one number (`clawviz.types.call_label`); every log-derived text goes
through `escape_md`. A button that names another call selects it (the URL follows).
"""

from __future__ import annotations

import streamlit as st

from clawviz.figures import reason_colour
from clawviz.types import Call, EpisodeAnalysis
from clawviz.types import call_label as number
from clawviz.ui import sections, state
from clawviz.ui.inspector import (
    escape_md,
    reason_text,
    reasons_at,
    reasons_concerning,
    replacement_of,
    retry_text,
    winning_path,
)


def select_call(call_id: str) -> None:
    """Button callback: make `call_id` the inspected call, in the Call section (the tree and the
    URL follow)."""
    st.session_state[state.KEY_CALL_SELECT] = call_id
    state.set_params(**sections.show_call_params(call_id))


def highlight_path(path_id: str) -> None:
    state.set_params(path=path_id)


def _name(calls: dict[str, Call], cid: str | None) -> str:
    if cid is None:
        return "—"
    return f"call {number(calls[cid])}" if cid in calls else escape_md(cid)


def episode_reasons(analysis: EpisodeAnalysis | None, calls: list[Call]) -> None:
    """Every episode reason with its formatted evidence and the call it is pinned on, and (in a
    dropped episode) a button per reason that opens that call."""
    if analysis is None or not analysis.reasons:
        return
    by_id = {c.call_id: c for c in calls}
    dropped = analysis.status != "kept"
    box = st.container(border=True) if dropped else st.container()
    if dropped:
        box.markdown(
            f"**Dropped** · {len(analysis.reasons)} reason(s); each is pinned (⚑) on the call "
            "that caused it in the tree below, whose kept path is greyed."
        )
    for i, r in enumerate(analysis.reasons):
        row = box.container(horizontal=True, vertical_alignment="center")
        row.badge(escape_md(reason_text(r, by_id)), color=reason_colour(r.code))
        if dropped and r.call_id in by_id:
            row.button(
                f"Inspect {_name(by_id, r.call_id)}",
                key=f"episode_reason_go_{i}",
                icon=":material/my_location:",
                on_click=select_call,
                args=(r.call_id,),
                type="tertiary",
            )


def call_decision(analysis: EpisodeAnalysis | None, calls: list[Call], call_id: str) -> None:
    """For the inspected call: the reasons it caused, its retry note (with a link to its
    replacement) and, on a not_longest branch, the path that won."""
    if analysis is None:
        return
    by_id = {c.call_id: c for c in calls}
    d = analysis.decisions.get(call_id)
    for r in reasons_at(analysis, call_id):
        st.error(
            f"This call caused **{escape_md(str(r.code))}**"
            + (f": {escape_md(r.evidence)}" if r.evidence else ""),
            icon=":material/flag:",
        )
    for r in reasons_concerning(analysis, call_id):
        st.warning(
            f"One of the calls of **{escape_md(str(r.code))}**"
            + (f" ({escape_md(r.evidence)})" if r.evidence else "")
            + f"; pinned on {_name(by_id, r.call_id)}.",
            icon=":material/flag:",
        )
    note = retry_text(d)
    if note:
        st.info(f"Retry: {escape_md(note)}", icon=":material/replay:")
    replacement = replacement_of(analysis, call_id)
    if replacement is not None and d is not None and d.state != "kept":
        st.button(
            f"Go to {_name(by_id, replacement)}, its replacement",
            key="episode_go_replacement",
            icon=":material/arrow_forward:",
            on_click=select_call,
            args=(replacement,),
        )
    if d is not None and d.reason == "not_longest":
        lost = [p for p in analysis.paths if call_id in p.call_ids and p.state != "kept"]
        if lost and lost[0].why:
            st.info(f"not_longest: {escape_md(lost[0].why)}", icon=":material/call_split:")
        winner = winning_path(analysis, call_id)
        if winner is not None:
            st.button(
                "Highlight the winning path",
                key="episode_highlight_winner",
                icon=":material/route:",
                on_click=highlight_path,
                args=(winner,),
            )
