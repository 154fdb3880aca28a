"""Cached reads for the pages: thin `st.cache_data` wrappers over the pure library.

Every function takes the store URL and the settings hash as plain arguments, so the cache key
changes when either does; objects that should not be hashed are passed with a leading `_`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import streamlit as st
from sqlmodel import Session

from clawviz import store
from clawviz.settings import Settings
from clawviz.store import CallRow, Episode, result_reward
from clawviz.types import Call, EpisodeAnalysis
from clawviz.ui.state import _engine_for

if TYPE_CHECKING:
    # Imported where a frame is built: the Episode page's first view loads no pandas.
    import pandas as pd

    from clawviz.review import AttemptSummary


@dataclass
class EpisodeView:
    """Everything the Episode page shows about one episode."""

    episode: dict[str, Any]
    result: dict[str, Any] | None
    calls: list[Call]
    analysis: EpisodeAnalysis | None
    analysis_error: str | None = None
    reward: float | None = None
    """The one reward rule: the analysis's reward, else the result's under the settings."""


def _session(url: str) -> Session:
    return Session(_engine_for(url))


@st.cache_data(show_spinner="Searching…")
def search_hits(url: str, text: str, role: str | None, syntax: bool) -> pd.DataFrame:
    """Full-text hits as a table (one row per hit, with an Episode link to the call)."""
    import pandas as pd

    with _session(url) as s:
        hits = store.search_messages(s, text, role=role or None, syntax=syntax)
    df = pd.DataFrame(
        [h.to_dict() | {"snippet": h.snippet} for h in hits],
        columns=[*store.Hit.__dataclass_fields__, "snippet"],
    )
    df["open"] = "episode?episode=" + df["episode_id"].astype(str) + "&call=" + df["call_id"]
    return df


@st.cache_data(show_spinner=False)
def store_counts(url: str) -> dict[str, int]:
    with _session(url) as s:
        return store.store_counts(s)


@st.cache_data(show_spinner="Analysing episodes…")
def ensure_analysed(url: str, settings_hash: str, _settings: Settings) -> None:
    """Compute decisions for every episode not yet analysed under these settings.

    An episode whose analysis fails is stored as dropped (analysis_error), so this raises only
    when the store itself fails.
    """
    from clawviz.jobs import ensure_analysis

    with _session(url) as s:
        ensure_analysis(s, _settings)


@st.cache_data(show_spinner=False)
def episodes(url: str, settings_hash: str) -> pd.DataFrame:
    with _session(url) as s:
        return store.episodes_frame(s, settings_hash)


@st.cache_data(show_spinner=False)
def runs_options(url: str, settings_hash: str) -> dict[str, list[str]]:
    """What the Runs filters offer (`store.runs_options`: distinct values, by SQL)."""
    with _session(url) as s:
        return store.runs_options(s, settings_hash)


@st.cache_data(show_spinner=False, max_entries=64)
def runs_task_options(
    url: str, settings_hash: str, find: str, chosen: tuple[str, ...], limit: int
) -> store.TaskOptions:
    """The Task filter's page of values (`store.runs_task_options`)."""
    with _session(url) as s:
        return store.runs_task_options(s, settings_hash, find, chosen, limit)


@st.cache_data(show_spinner=False, max_entries=64)
def runs_aggregates(
    url: str, settings_hash: str, view_key: str
) -> tuple[store.RunsSummary, pd.DataFrame]:
    """The counts and reason counts of one Runs view (`view_key`: `runs_view_key`), one pass."""
    q = runs_query_of(view_key)
    with _session(url) as s:
        return store.runs_aggregates(s, settings_hash, q.filter, q.matching)


def runs_summary(url: str, settings_hash: str, view_key: str) -> store.RunsSummary:
    """The counts of one Runs view (`runs_aggregates`)."""
    return runs_aggregates(url, settings_hash, view_key)[0]


@st.cache_data(show_spinner=False, max_entries=128)
def runs_page(url: str, settings_hash: str, view_key: str) -> pd.DataFrame:
    """One page of the Runs table, cached per store, settings hash and view (filter, search,
    sort, page): a filter change reads one page, and going back to a view reads nothing."""
    with _session(url) as s:
        return store.runs_page(s, settings_hash, runs_query_of(view_key))


@st.cache_data(show_spinner=False, max_entries=64)
def runs_charts(url: str, settings_hash: str, view_key: str) -> RunsCharts:
    """The Runs charts' inputs for a view, each an SQL aggregate."""
    q = runs_query_of(view_key)
    with _session(url) as s:
        groups, n_groups = store.group_advantages(s, settings_hash, q.filter, q.matching)
        return RunsCharts(
            runs_aggregates(url, settings_hash, view_key)[1],
            store.reward_bins(s, settings_hash, q.filter, q.matching),
            groups,
            n_groups,
        )


@dataclass
class RunsCharts:
    reasons: pd.DataFrame
    rewards: pd.DataFrame
    groups: pd.DataFrame
    n_groups: int


def runs_view_key(q: store.RunsQuery) -> str:
    """A Runs query as canonical text: the cache key of its page, summary and charts."""
    d = asdict(q)
    d["filter"] = asdict(q.filter)
    return json.dumps(d, sort_keys=True)


def runs_query_of(view_key: str) -> store.RunsQuery:
    d = json.loads(view_key)
    f: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in d.pop("filter").items()
    }
    matching = d.pop("matching")
    return store.RunsQuery(
        filter=store.EpisodeFilter(**f),
        matching=None if matching is None else tuple(matching),
        **d,
    )


@st.cache_data(show_spinner=False)
def episode_list(url: str, settings_hash: str) -> list[store.EpisodeRow]:
    """`episodes` as plain rows (`store.episode_rows`), for the Episode page's switcher."""
    with _session(url) as s:
        return store.episode_rows(s, settings_hash)


@st.cache_data(show_spinner=False)
def dataset_stats(url: str, settings_hash: str) -> store.DatasetStats:
    with _session(url) as s:
        return store.dataset_stats(s, settings_hash)


@st.cache_data(show_spinner=False)
def sources(url: str) -> pd.DataFrame:
    with _session(url) as s:
        return store.sources_frame(s)


@st.cache_data(show_spinner=False)
def rejected(url: str) -> pd.DataFrame:
    with _session(url) as s:
        return store.rejected_frame(s)


@st.cache_data(show_spinner=False)
def attempts(url: str, task_id: str, settings_hash: str) -> pd.DataFrame:
    with _session(url) as s:
        return store.attempts_of_task(s, task_id, settings_hash)


@st.cache_data(show_spinner=False, max_entries=8)
def attempt_summary(
    url: str, settings_hash: str, revision: int, _settings: Settings
) -> AttemptSummary:
    """The Tasks queue's pass over every attempt (`review.attempt_summary`), cached under the
    store's attempts revision: read `store.attempts_revision` first, then call this, so a
    change committed in between is recomputed on the next view, never kept stale."""
    from clawviz.review import attempt_summary as summarise

    with _session(url) as s:
        return summarise(s, _settings)


@st.cache_data(show_spinner="Loading episode…", max_entries=64)
def episode_view(
    url: str, episode_id: str, settings_hash: str, _settings: Settings
) -> EpisodeView | None:
    """The episode, its result, its calls and its analysis; None for an unknown id."""
    with _session(url) as s:
        ep = s.get(Episode, episode_id)
        if ep is None:
            return None
        episode = ep.model_dump()
        result = store.load_result(s, episode_id)
        result_d = result.model_dump() if result is not None else None
        calls = store.load_calls(s, episode_id)
        analysis, error = None, None
        try:
            from clawviz.jobs import episode_analysis

            analysis = episode_analysis(s, episode_id, _settings)
        except Exception as exc:  # noqa: BLE001 - shown on the page, the calls still display
            error = f"{type(exc).__name__}: {exc}"
    reward = analysis.reward if analysis is not None else None
    if reward is None:
        reward = result_reward(result, _settings)
    return EpisodeView(episode, result_d, calls, analysis, error, reward)


@st.cache_data(show_spinner=False, max_entries=256)
def raw_call(url: str, call_id: str) -> dict[str, Any] | None:
    """The stored raw pieces of one call: request body rebuilt, response as logged, headers."""
    with _session(url) as s:
        row = s.get(CallRow, call_id)
        if row is None:
            return None
        try:
            request = store.raw_request(s, call_id)
        except (KeyError, ValueError) as exc:
            request = {"error": f"request could not be rebuilt: {exc}"}
        return {
            "request": request,
            "raw_response": store.unpack_text(row.raw_response),
            "headers_json": row.headers_json,
            "rollout_json": row.rollout_json,
        }


@st.cache_data(show_spinner=False)
def has_workspace(url: str, episode_id: str) -> bool:
    """Whether the episode's results line names an after-workspace (the Workspace diff has
    one): one indexed row, not the set of every such episode (issue 26: a view of one episode
    costs one episode)."""
    from clawviz.review import attempt_has_workspace

    with _session(url) as s:
        return attempt_has_workspace(s, episode_id)


@dataclass(frozen=True)
class RunsMarks:
    """What a Runs page's rows carry besides their episode: comments and cross-checks."""

    notes: dict[str, int]
    checks: dict[str, bool | None]
    linked: int


def runs_marks(url: str, episode_ids: tuple[str, ...]) -> RunsMarks:
    """Comment counts and cross-checks of one page's episodes (bounded by the page), and how
    many transcripts the store links to their wire episodes. Not cached: a comment written on
    the Episode page shows at once."""
    from clawviz.store import comment_counts

    with _session(url) as s:
        return RunsMarks(
            comment_counts(s, episode_ids),
            store.cross_checks(s, episode_ids),
            store.linked_transcripts(s),
        )
