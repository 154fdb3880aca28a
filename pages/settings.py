"""Settings page: the one settings table, and decision settings editable for this session."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from clawviz.settings import DEFAULT_SETTINGS, SETTINGS, SETTINGS_BY_NAME, masked_url
from clawviz.ui import data, state


def _show(v) -> str:
    if isinstance(v, (list, tuple, set, frozenset)):
        return ", ".join(str(x) for x in v) or "(none)"
    return "(none)" if v is None else str(v)


def _help(name: str) -> str:
    """The settings table's help text of one setting, as a widget tooltip."""
    return SETTINGS_BY_NAME[name].help


def settings_table() -> None:
    current = state.current_settings()
    rows = [
        {
            "name": s.name,
            "help": s.help,
            "current": _show(
                masked_url(state.database_url())
                if s.name == "database_url"
                else getattr(current, s.name)
            ),
            "default": _show(s.default),
            "changes decisions": s.affects_decisions,
        }
        for s in SETTINGS
    ]
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="settings_table",
        height=38 + 35 * len(rows),
        column_config={"help": st.column_config.TextColumn(width="large")},
    )


def edit_form() -> None:
    cur = state.current_settings()
    with st.form(state.KEY_SETTINGS_FORM):
        c1, c2 = st.columns(2)
        max_leaves = c1.number_input(
            "max_leaves",
            min_value=1,
            max_value=10_000,
            value=int(cur.max_leaves),
            step=1,
            help=_help("max_leaves"),
        )
        policies = ["longest", "all_valid"]
        branch_policy = c2.selectbox(
            "branch_policy",
            policies,
            index=policies.index(cur.branch_policy),
            help=_help("branch_policy"),
        )
        tools_text = c1.text_input(
            "unsupported_tools (comma separated)",
            value=", ".join(cur.unsupported_tools),
            help=_help("unsupported_tools"),
        )
        reward_threshold = c2.number_input(
            "reward_threshold",
            min_value=0.0,
            max_value=1.0,
            value=float(cur.reward_threshold),
            step=0.05,
            help=_help("reward_threshold"),
        )
        loo = c1.checkbox(
            "grpo_leave_one_out",
            value=bool(cur.grpo_leave_one_out),
            help=_help("grpo_leave_one_out"),
        )
        no_std = c2.checkbox(
            "grpo_no_std (Dr. GRPO)", value=bool(cur.grpo_no_std), help=_help("grpo_no_std")
        )
        eps = c1.number_input(
            "grpo_eps",
            min_value=0.0,
            value=float(cur.grpo_eps),
            format="%.1e",
            step=1e-6,
            help=_help("grpo_eps"),
        )
        cap = c2.number_input(
            "is_ratio_cap (C)",
            min_value=1.0,
            value=float(cur.is_ratio_cap),
            step=0.5,
            help=_help("is_ratio_cap"),
        )
        b1, b2 = st.columns([1, 5])
        apply = b1.form_submit_button("Apply", type="primary")
        reset = b2.form_submit_button("Reset to defaults")
    if reset:
        state.set_settings_overrides({})
        st.rerun()
    if apply:
        tools = tuple(t.strip() for t in tools_text.split(",") if t.strip())
        state.set_settings_overrides(
            {
                "max_leaves": int(max_leaves),
                "branch_policy": branch_policy,
                "unsupported_tools": tools,
                "reward_threshold": float(reward_threshold),
                "grpo_leave_one_out": bool(loo),
                "grpo_no_std": bool(no_std),
                "grpo_eps": float(eps),
                "is_ratio_cap": float(cap),
            }
        )
        new = state.current_settings()
        # Decisions are stored per settings hash, so switching back to a hash seen before is free.
        error = data.ensure_analysed(state.database_url(), new.settings_hash, new)
        if error:
            st.error(f"Decisions could not be recomputed: {error}")
        st.rerun()


def main() -> None:
    st.title("Settings")
    cur = state.current_settings()
    st.markdown(
        f"Decisions on every page are computed under settings hash `{cur.settings_hash}`"
        + (" (defaults)." if cur.settings_hash == DEFAULT_SETTINGS.settings_hash else ".")
    )
    st.caption(
        "Changes apply to this browser session only; decisions for each settings hash are "
        "computed once and kept in the store. The CLI takes the same names as options."
    )
    edit_form()
    settings_table()


state.require_app_frame()
main()
