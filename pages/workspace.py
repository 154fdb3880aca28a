"""Workspace diff page: what an attempt changed, file by file, beside its per-check scores.

Deep link: ?episode=<episode id>&file=<path>. Layout only; the view is `clawviz.ui.workspace`.
"""

from __future__ import annotations

import streamlit as st

from clawviz.ui import state
from clawviz.ui.pages import run_page
from clawviz.ui.workspace import attempt_view


def main() -> None:
    st.title("Workspace diff")
    attempt_view(state.get_param(state.QP_EPISODE))


run_page(__file__, main)
