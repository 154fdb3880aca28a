"""Streamlit renderers for messages and calls. Log text only ever goes through st.text / st.code
/ st.json or `escape_md`, never through HTML."""

from __future__ import annotations

from typing import Any

import streamlit as st

from clawviz.figures import reason_colour
from clawviz.types import Call, Message, Reason
from clawviz.ui.inspector import block_text, escape_md, reason_text, tool_input_json

MAX_BLOCK_CHARS = 20_000
"""Longer text blocks are cut for display (the raw JSON view still has everything)."""


def _clip(text: str) -> str:
    if len(text) <= MAX_BLOCK_CHARS:
        return text
    return text[:MAX_BLOCK_CHARS] + f"\n… [{len(text) - MAX_BLOCK_CHARS} more characters]"


def reason_badges(reasons: list[Reason], calls: list[Call] | None = None) -> None:
    """Every reason as a coloured badge carrying its evidence and the call it is pinned on."""
    if not reasons:
        return
    by_id = {c.call_id: c for c in calls or []}
    cols = st.container(horizontal=True)
    for r in reasons:
        cols.badge(escape_md(reason_text(r, by_id)), color=reason_colour(r.code))


def render_blocks(blocks: list[dict[str, Any]] | str | None) -> None:
    """Text, thinking, tool calls (highlighted JSON) and tool results of one message."""
    if blocks is None:
        return
    if isinstance(blocks, str):
        blocks = [{"type": "text", "text": blocks}]
    for b in blocks:
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            st.text(_clip(str(b.get("text", ""))))
        elif kind == "thinking":
            with st.expander("thinking", icon=":material/psychology:"):
                st.text(_clip(str(b.get("thinking", ""))))
        elif kind == "redacted_thinking":
            st.caption("[redacted thinking]")
        elif kind == "tool_use":
            st.markdown(
                f":blue-badge[tool call] **{escape_md(str(b.get('name', '?')))}** "
                f":gray[{escape_md(str(b.get('id', '')))}]"
            )
            st.code(_clip(tool_input_json(b.get("input"))), language="json", wrap_lines=True)
        elif kind == "tool_result":
            colour = "red" if b.get("is_error") else "green"
            label = "tool error" if b.get("is_error") else "tool result"
            st.markdown(
                f":{colour}-badge[{label}] :gray[{escape_md(str(b.get('tool_use_id', '')))}]"
            )
            st.code(_clip(block_text(b.get("content"))), language=None, wrap_lines=True)
        elif kind == "image":
            st.caption("[image]")
        else:
            st.json(b, expanded=False)


def render_message(msg: Message, index: int | None = None) -> None:
    """One message: a role line then its blocks."""
    role = str(msg.get("role", "?"))
    prefix = f"#{index + 1} · " if index is not None else ""
    icon = {
        "user": ":material/person:",
        "assistant": ":material/smart_toy:",
        "system": ":material/settings:",
        "tool": ":material/build:",
    }.get(role, ":material/chat:")
    st.markdown(f"{icon} **{escape_md(prefix + role)}**")
    render_blocks(msg.get("content"))
