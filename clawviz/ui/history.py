"""The Runs filters as URL parameters, and the Runs order the Episode switcher walks.

Every filter of the Runs page lives in its URL (`/?task=a&task=b&reward=0.2-0.8&q=...`: Runs is
the default page, served at `/`), so a pasted link restores the table, Back walks filter
changes, and the Episode page can step through the same list (previous / next) the Runs table
showed. Parameters are written through `clawviz.ui.state.set_params`, one history entry per
change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from clawviz.store import EpisodeFilter, EpisodeRow, filter_rows
from clawviz.ui import state

QP_TASKS = "task"
QP_HARNESS = "harness"
QP_MODEL = "model"
QP_STATUS = "status"
QP_REASON = "reason"
QP_REWARD = "reward"
QP_NO_REWARD = "no_reward"
QP_QUERY = "q"
QP_ROLE = "role"
QP_SYNTAX = "syntax"
QP_CHARTS = "charts"
"""`charts=1`: the Runs charts section is open (it is drawn only then)."""

LIST_FILTERS = {
    QP_TASKS: state.KEY_FILTER_TASK,
    QP_HARNESS: state.KEY_FILTER_HARNESS,
    QP_MODEL: state.KEY_FILTER_MODEL,
    QP_STATUS: state.KEY_FILTER_STATUS,
    QP_REASON: state.KEY_FILTER_REASON,
}
"""Multiselect filters: URL parameter (repeated) -> widget key."""
RUNS_PARAMS = (*LIST_FILTERS, QP_REWARD, QP_NO_REWARD, QP_QUERY, QP_ROLE, QP_SYNTAX, QP_CHARTS)
FULL_RANGE = (0.0, 1.0)
ROLES = ("", "user", "assistant", "tool")


def parse_range(text: str | None) -> tuple[float, float]:
    """`"0.2-0.8"` -> (0.2, 0.8); anything unreadable is the full range."""
    if not text:
        return FULL_RANGE
    lo_text, sep, hi_text = text.partition("-")
    try:
        lo, hi = float(lo_text), float(hi_text)
    except ValueError:
        return FULL_RANGE
    if not sep or not (0.0 <= lo <= hi <= 1.0):
        return FULL_RANGE
    return (lo, hi)


def format_range(lo: float, hi: float) -> str | None:
    return None if (lo, hi) == FULL_RANGE else f"{lo:g}-{hi:g}"


def params_now() -> dict[str, list[str]]:
    """The Runs parameters of the current URL."""
    return {k: st.query_params.get_all(k) for k in RUNS_PARAMS if st.query_params.get_all(k)}


def filter_from(params: Mapping[str, list[str]]) -> EpisodeFilter:
    """The episode filter a set of Runs parameters describes."""

    def many(name: str) -> tuple[str, ...]:
        return tuple(v for v in params.get(name, []) if v)

    def one(name: str) -> str | None:
        values = params.get(name) or []
        return values[-1] if values else None

    lo, hi = parse_range(one(QP_REWARD))
    full = (lo, hi) == FULL_RANGE
    return EpisodeFilter(
        tasks=many(QP_TASKS),
        harnesses=many(QP_HARNESS),
        models=many(QP_MODEL),
        statuses=many(QP_STATUS),
        reasons=many(QP_REASON),
        reward_min=None if full else lo,
        reward_max=None if full else hi,
        include_missing_reward=one(QP_NO_REWARD) != "0",
    )


def search_from(params: Mapping[str, list[str]]) -> tuple[str, str | None, bool]:
    """(text, role or None, query syntax on) of a set of Runs parameters."""
    text = (params.get(QP_QUERY) or [""])[-1]
    role = (params.get(QP_ROLE) or [""])[-1]
    syntax = (params.get(QP_SYNTAX) or [""])[-1] == "1"
    return text, (role if role in ROLES and role else None), syntax


def seed_widgets(options: Mapping[str, list[str]]) -> None:
    """Set every Runs filter widget from the URL before it is drawn (the URL is the truth).

    `options` maps each list parameter to the values its multiselect offers; values a pasted
    URL names that the store does not have are left out.
    """
    params = params_now()
    for name, key in LIST_FILTERS.items():
        allowed = set(options.get(name, []))
        st.session_state[key] = [v for v in params.get(name, []) if v in allowed]
    f = filter_from(params)
    lo = f.reward_min if f.reward_min is not None else FULL_RANGE[0]
    hi = f.reward_max if f.reward_max is not None else FULL_RANGE[1]
    st.session_state[state.KEY_FILTER_REWARD] = (lo, hi)
    st.session_state[state.KEY_FILTER_NO_REWARD] = f.include_missing_reward
    text, role, syntax = search_from(params)
    st.session_state[state.KEY_SEARCH_TEXT] = text
    st.session_state[state.KEY_SEARCH_ROLE] = role or ""
    st.session_state[state.KEY_SEARCH_SYNTAX] = syntax
    st.session_state[state.KEY_RUNS_CHARTS] = (params.get(QP_CHARTS) or [""])[-1] == "1"


def widget_params() -> dict[str, list[str]]:
    """The Runs parameters the filter widgets show (unknown URL values already dropped)."""
    ss = st.session_state
    lo, hi = ss.get(state.KEY_FILTER_REWARD, FULL_RANGE)
    values: dict[str, list[str]] = {
        name: [str(v) for v in ss.get(key) or []] for name, key in LIST_FILTERS.items()
    }
    single = {
        QP_REWARD: format_range(lo, hi),
        QP_NO_REWARD: None if ss.get(state.KEY_FILTER_NO_REWARD, True) else "0",
        QP_QUERY: (ss.get(state.KEY_SEARCH_TEXT) or "").strip() or None,
        QP_ROLE: ss.get(state.KEY_SEARCH_ROLE) or None,
        QP_SYNTAX: "1" if ss.get(state.KEY_SEARCH_SYNTAX) else None,
        QP_CHARTS: "1" if ss.get(state.KEY_RUNS_CHARTS) else None,
    }
    values.update({k: [v] for k, v in single.items() if v})
    return {k: v for k, v in values.items() if v}


def on_filter_change() -> None:
    """Widget callback: write every Runs filter to the URL (one history entry)."""
    wanted = widget_params()
    state.set_params(**{name: wanted.get(name) for name in RUNS_PARAMS})
    remember_runs_query()


def remember_runs_query() -> None:
    """Keep the Runs parameters for the Episode page's previous / next."""
    st.session_state[state.KEY_RUNS_QUERY] = widget_params()


def runs_order(
    eps: Sequence[EpisodeRow], params: Mapping[str, list[str]], matching: set[str] | None
) -> list[str]:
    """Episode ids in the order the Runs table lists them under these parameters.

    `eps` are `store.episode_rows` (plain tuples, not the Runs frame): the Episode page's
    switcher calls this on its first view, which imports no pandas.
    """
    shown = filter_rows(eps, filter_from(params))
    return [r.episode_id for r in shown if matching is None or r.episode_id in matching]


def neighbours(order: list[str], episode_id: str) -> tuple[str | None, str | None]:
    """(previous, next) of `episode_id` in `order`; None at either end or when absent."""
    if episode_id not in order:
        return None, None
    i = order.index(episode_id)
    return (order[i - 1] if i > 0 else None, order[i + 1] if i + 1 < len(order) else None)
