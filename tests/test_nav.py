"""The Episode switcher's bounded queries (clawviz/store/nav.py), on both backends: neighbours
in the Runs default order (task, harness, attempt, id; missing values last) and search."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from clawviz.store import models
from clawviz.store.db import get_engine
from clawviz.store.nav import MAX_RESULTS, episode_count, neighbours, search_episodes
from tests.dburl import fresh_url

# (episode_id, task, harness, attempt), listed here in the order the Runs table shows them,
# worked out by hand from its ORDER BY: task (missing last), harness (missing last),
# attempt (missing last), then the id.
ORDER = [
    ("z-first", "task_a", "claude-code", 1),
    ("a-second", "task_a", "claude-code", 2),
    ("m-third", "task_a", "claude-code", None),
    ("b-fourth", "task_a", "codex", 1),
    ("c-fifth", "task_a", None, 1),
    ("d_sixth", "task_b", "claude-code", 0),
    ("e%seventh", "task_b", "claude-code", 0),
    ("no-task-1", None, "claude-code", 1),
    ("no-task-2", None, None, None),
]


@pytest.fixture
def store(tmp_path) -> str:
    url = fresh_url(tmp_path, "nav")
    with Session(get_engine(url)) as s:
        for ep, task, harness, attempt in reversed(ORDER):
            s.add(models.Episode(episode_id=ep, task_id=task, harness=harness, attempt=attempt))
        s.commit()
    return url


def test_neighbours_walk_the_runs_order(store):
    ids = [r[0] for r in ORDER]
    with Session(get_engine(store)) as s:
        for i, ep in enumerate(ids):
            pos = neighbours(s, ep)
            assert pos is not None
            assert pos.previous == (ids[i - 1] if i else None), ep
            assert pos.next == (ids[i + 1] if i + 1 < len(ids) else None), ep
            assert (pos.index, pos.total) == (i + 1, len(ids))
        assert neighbours(s, "no-such-episode") is None


def test_search_by_id_prefix_or_task_bounded_and_in_order(store):
    with Session(get_engine(store)) as s:
        assert search_episodes(s, "NO-TASK") == ["no-task-1", "no-task-2"]
        assert search_episodes(s, "task_b") == ["d_sixth", "e%seventh"]
        assert search_episodes(s, "task_a", limit=2) == ["z-first", "a-second"]
        # LIKE wildcards in the text are literal characters.
        assert search_episodes(s, "d_") == ["d_sixth"]
        assert search_episodes(s, "e%") == ["e%seventh"]
        assert search_episodes(s, "%") == []
        assert search_episodes(s, "_") == []
        assert search_episodes(s, "  ") == []
        assert len(search_episodes(s, "t", limit=10_000)) <= MAX_RESULTS


def test_previous_next_and_the_count_skip_a_linked_transcript(store):
    # A transcript linked to its session's wire episode (jobs.sessions: primary_episode) is
    # that episode's cross-check, which Runs does not list: walking the switcher never lands
    # on it, and the count is of listed episodes. Placed by hand between a-second and m-third.
    with Session(get_engine(store)) as s:
        s.add(
            models.Episode(
                episode_id="b-transcript",
                task_id="task_a",
                harness="claude-code",
                attempt=2,
                primary_episode="a-second",
            )
        )
        s.commit()
        pos = neighbours(s, "a-second")
        assert pos is not None
        assert (pos.previous, pos.next) == ("z-first", "m-third")
        assert (pos.index, pos.total) == (2, len(ORDER))
        assert episode_count(s) == len(ORDER)
        # Opened by a link, it still has neighbours among the listed episodes.
        here = neighbours(s, "b-transcript")
        assert here is not None and (here.previous, here.next) == ("a-second", "m-third")


def test_has_episodes_counts_only_listed_ones(tmp_path):
    """The Episode page's empty-store check reads one row: a store holding only a transcript
    linked to a wire episode that is gone lists nothing, and says so."""
    from clawviz.store.nav import has_episodes

    url = fresh_url(tmp_path, "empty")
    with Session(get_engine(url)) as s:
        assert not has_episodes(s)
        s.add(models.Episode(episode_id="t", primary_episode="gone"))
        s.commit()
        assert not has_episodes(s)
        s.add(models.Episode(episode_id="w", task_id="task_a"))
        s.commit()
        assert has_episodes(s)


def test_attempt_has_workspace_asks_one_episode(tmp_path):
    from clawviz.review import attempt_has_workspace

    url = fresh_url(tmp_path, "ws")
    with Session(get_engine(url)) as s:
        s.add(models.Result(episode_id="with", workspace_after="/w/after"))
        s.add(models.Result(episode_id="without", workspace_before="/w/before"))
        s.commit()
        assert attempt_has_workspace(s, "with")
        assert not attempt_has_workspace(s, "without")
        assert not attempt_has_workspace(s, "no-such-episode")
