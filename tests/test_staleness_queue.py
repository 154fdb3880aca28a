"""The staleness check reads the change queue, not every episode (issue 26 §3): triggers queue
an episode when its calls or result change, the check reads only the queue, and a change made
while an analysis runs is never lost."""

from __future__ import annotations

import orjson
import pytest
from sqlalchemy import event, text
from sqlmodel import Session
from test_analysis import add_episode, retry_episode

from clawviz.jobs import analyse
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import decisions
from clawviz.store.db import init_db
from clawviz.store.models import Result
from tests.dburl import memory_engine

H = DEFAULT_SETTINGS.settings_hash


@pytest.fixture
def session():
    engine = memory_engine("queue")
    init_db(engine)
    with Session(engine) as s:
        yield s


def _queue(session) -> set[str]:
    rows = session.execute(
        text("SELECT episode_id FROM episode_dirty WHERE settings_hash = :h"), {"h": H}
    )
    return {r[0] for r in rows}


def _stale_ids(session) -> list[str]:
    return sorted(s.episode_id for s in decisions.stale_episodes(session, DEFAULT_SETTINGS))


def _add_result(session, episode_id: str, reward: float) -> None:
    session.add(Result(episode_id=episode_id, task_id="task_1", reward=reward,
                       checks_json=orjson.dumps({}).decode()))  # fmt: skip
    session.commit()


def test_only_changed_episodes_are_queued_and_checked(session):
    for eid in ("a", "b", "c"):
        add_episode(session, retry_episode(eid))
    analyse.ensure_analysis(session)
    assert _queue(session) == set() and _stale_ids(session) == []
    # A result line for b, and new calls for c: exactly those two are queued and stale.
    _add_result(session, "b", 0.5)
    more = retry_episode("c")
    for call in more.calls:
        call.call_id = call.call_id + "-late"
        call.line += 100
    add_episode(session, more)
    assert _queue(session) == {"b", "c"}
    assert _stale_ids(session) == ["b", "c"]
    analyse.ensure_analysis(session)
    assert _queue(session) == set() and _stale_ids(session) == []
    assert decisions.read_analysis(session, "b").reward == 0.5


def test_the_check_reads_the_queue_never_the_episode_table(session):
    for eid in ("a", "b"):
        add_episode(session, retry_episode(eid))
    analyse.ensure_analysis(session)
    seen: list[str] = []
    engine = session.get_bind()

    def listener(*a, **_k):
        seen.append(a[2])

    event.listen(engine, "before_cursor_execute", listener)
    try:
        decisions.stale_episodes(session, DEFAULT_SETTINGS)
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    # Every statement that touches episode reaches it through the queue (a join on its key).
    touching = [s for s in seen if "FROM episode " in s or "FROM episode\n" in s]
    assert touching == [], seen
    assert any("FROM episode_dirty" in s for s in seen), seen


def test_a_change_during_an_analysis_stays_queued(session):
    add_episode(session, retry_episode("a"))
    analyse.ensure_analysis(session)
    _add_result(session, "a", 1.0)
    stale = decisions.stale_episodes(session, DEFAULT_SETTINGS)
    assert [s.episode_id for s in stale] == ["a"]
    # Another writer changes the result while this analysis runs (after its check read).
    session.execute(text("UPDATE result SET reward = 0.25 WHERE episode_id = 'a'"))
    session.commit()
    analyse.ensure_analysis(session)  # stores a's analysis; its queue row had a newer seq
    assert decisions.read_analysis(session, "a").reward == 0.25
    assert _queue(session) == set()


def test_new_settings_and_a_version_bump_take_the_full_check_once(session, monkeypatch):
    for eid in ("a", "b"):
        add_episode(session, retry_episode(eid))
    other = DEFAULT_SETTINGS.with_(max_leaves=3)
    analyse.ensure_analysis(session)
    # Unregistered settings: every episode is stale, and stays queued until analysed.
    assert sorted(s.episode_id for s in decisions.stale_episodes(session, other)) == ["a", "b"]
    assert sorted(s.episode_id for s in decisions.stale_episodes(session, other)) == ["a", "b"]
    analyse.ensure_analysis(session, other, only={"a"})
    assert [s.episode_id for s in decisions.stale_episodes(session, other)] == ["b"]
    # A new analysis version (stored decisions are recomputed): the marks are of the old one,
    # so the full check runs again and finds every episode stale, with nothing queued by hand.
    monkeypatch.setattr(decisions, "ANALYSIS_VERSION", decisions.ANALYSIS_VERSION + 1)
    assert _queue(session) == set()
    assert _stale_ids(session) == ["a", "b"]
    assert _queue(session) == {"a", "b"}
