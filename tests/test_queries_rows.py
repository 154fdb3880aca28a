"""`queries.episode_rows` / `filter_rows`: the Runs list and filter without pandas, for the
Episode page's switcher. Same rows, order and filter results as `episodes_frame` /
`filter_episodes` (which the Runs table shows)."""

from __future__ import annotations

import math

import pytest
from sqlmodel import Session

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import queries
from clawviz.store.db import get_engine
from clawviz.store.queries import EpisodeFilter, EpisodeRow

H = DEFAULT_SETTINGS.settings_hash


def _row(ep, task, harness, model, status, reasons, reward) -> EpisodeRow:
    return EpisodeRow(ep, task, harness, model, 1, 2, reward, None, status, reasons, "proxy")


SMALL = [
    _row("a", "t1", "x", "m", "kept", "", 0.9),
    _row("b", "t1", "y", "m", "dropped", "too_many_branches", 0.2),
    _row("c", "t2", "x", "n", "dropped", "missing_reward", None),
    _row("d", "t2", "y", "n", "dropped", "ended_in_error, missing_reward", None),
]


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, ["a", "b", "c", "d"]),
        ({"tasks": ("t1",)}, ["a", "b"]),
        ({"reasons": ("too_many_branches",)}, ["b"]),
        ({"reasons": ("missing_reward",)}, ["c", "d"]),
        # A code is matched whole, never as a piece of a longer code.
        ({"reasons": ("error",)}, []),
        ({"reasons": ("ended_in_error", "too_many_branches")}, ["b", "d"]),
        ({"reward_min": 0.5}, ["a", "c", "d"]),
        ({"reward_min": 0.5, "include_missing_reward": False}, ["a"]),
        ({"reward_max": 0.5, "include_missing_reward": False}, ["b"]),
        ({"statuses": ("dropped",), "harnesses": ("x",)}, ["c"]),
        ({"models": ("n",), "reasons": ("ended_in_error",)}, ["d"]),
    ],
)
def test_filter_rows_on_a_small_list(kw, expected):
    assert [r.episode_id for r in queries.filter_rows(SMALL, EpisodeFilter(**kw))] == expected


@pytest.fixture
def session(sample_db_url):
    with Session(get_engine(sample_db_url)) as s:
        yield s


def _same(value, cell) -> bool:
    """A row value against the frame's cell: None stands for the frame's NaN / NA."""
    if value is None:
        return cell is None or (isinstance(cell, float) and math.isnan(cell)) or str(cell) == "<NA>"
    return value == cell


def test_episode_rows_are_the_runs_frame(session):
    rows = queries.episode_rows(session, H)
    df = queries.episodes_frame(session, H)
    assert len(rows) == len(df) == queries.store_counts(session)["episodes"] > 0
    assert list(EpisodeRow._fields) == queries.EPISODE_COLUMNS
    for row, (_, cells) in zip(rows, df.iterrows(), strict=True):
        for name in queries.EPISODE_COLUMNS:
            assert _same(getattr(row, name), cells[name]), (row.episode_id, name)
    # Rewards, advantages and reasons really vary in the sample store (not all missing).
    assert any(r.reward is not None for r in rows) and any(r.reward is None for r in rows)
    assert any(r.advantage is not None for r in rows)
    assert any(r.reasons for r in rows)
    # Under an unknown settings hash nothing is analysed, but every episode is listed.
    other = queries.episode_rows(session, "not-a-hash")
    assert [r.episode_id for r in other] == [r.episode_id for r in rows]
    assert {r.status for r in other} == {"not analysed"}


def test_filter_rows_agrees_with_the_runs_filter_on_the_sample_store(session):
    rows = queries.episode_rows(session, H)
    df = queries.episodes_frame(session, H)
    tasks = sorted({r.task_id for r in rows if r.task_id})
    reasons = queries.all_reasons(df)
    filters = [
        EpisodeFilter(),
        EpisodeFilter(tasks=tuple(tasks[:2])),
        EpisodeFilter(statuses=("dropped",)),
        EpisodeFilter(statuses=("kept",), include_missing_reward=False),
        EpisodeFilter(reasons=tuple(reasons[:1])),
        EpisodeFilter(reasons=tuple(reasons[-2:]), statuses=("dropped",)),
        EpisodeFilter(reward_min=0.5),
        EpisodeFilter(reward_min=0.2, reward_max=0.8, include_missing_reward=False),
        EpisodeFilter(harnesses=("openclaw",), models=("no-such-model",)),
    ]
    sizes = set()
    for f in filters:
        want = list(queries.filter_episodes(df, f)["episode_id"])
        assert [r.episode_id for r in queries.filter_rows(rows, f)] == want, f
        sizes.add(len(want))
    assert len(sizes) >= 4  # the filters do narrow the list, differently
