"""The attempts revision (issue 26 §3): the Tasks queue's cache key. Triggers on both backends
move it at every committed change of a result's or an episode's attempt columns, whatever
process writes, and leave it alone otherwise; on PostgreSQL concurrent writers never wait on it.
The queue built from a cached summary is the queue built from the store."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlmodel import Session

from clawviz.review import attempt_summary, task_queue
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import attempts_revision, compact_attempts, migrations
from clawviz.store.db import init_db
from clawviz.store.models import Episode, Result, Review
from tests.dburl import fresh_url, on_postgres


@pytest.fixture
def engine(tmp_path):
    engine = sa.create_engine(fresh_url(tmp_path, "rev"))
    init_db(engine)
    yield engine
    engine.dispose()


def _rev(engine) -> int:
    """The revision as another process reads it: a new connection, committed data only."""
    with engine.connect() as conn:
        return attempts_revision(conn)


def _run(engine, sql: str, **params) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text(sql), params)


def _seed(engine) -> None:
    with Session(engine) as s:
        s.add(Episode(episode_id="e1", task_id="t1", model_role="strong", n_calls=3))
        s.add(Episode(episode_id="e2", task_id="t2", model_role="small", n_calls=2))
        s.add(Result(episode_id="e1", task_id="t1", model_role="strong", reward=1.0))
        s.commit()


def test_every_change_to_an_attempt_moves_the_revision(engine):
    seen = [_rev(engine)]
    _seed(engine)
    changes = [
        ("result inserted", "INSERT INTO result (episode_id, task_id, model_role, reward, "
         "checks_json, rubric_json) VALUES ('e2', 't2', 'small', 0.25, '{}', '{}')"),
        ("a reward rescored", "UPDATE result SET reward = 0.5 WHERE episode_id = 'e2'"),
        ("checks rewritten", """UPDATE result SET checks_json = '{"a": 1.0}' WHERE id = 1"""),
        ("a result's role", "UPDATE result SET model_role = 'small' WHERE episode_id = 'e1'"),
        ("a result's task", "UPDATE result SET task_id = 't9' WHERE episode_id = 'e1'"),
        ("an episode re-listed", "UPDATE episode SET task_id = 't3' WHERE episode_id = 'e2'"),
        ("an episode's role", "UPDATE episode SET model_role = 'strong' WHERE episode_id = 'e2'"),
        ("an episode renamed", "UPDATE episode SET episode_id = 'e3' WHERE episode_id = 'e2'"),
        ("a result deleted", "DELETE FROM result WHERE episode_id = 'e2'"),
        ("an episode deleted", "DELETE FROM episode WHERE episode_id = 'e3'"),
    ]  # fmt: skip
    for what, sql in changes:
        _run(engine, sql)
        seen.append(_rev(engine))
        assert seen[-1] != seen[-2], what
    # Never back to an earlier value: a summary cached under it cannot come back.
    assert len(set(seen)) == len(seen)


def test_changes_the_queue_does_not_read_leave_it(engine):
    _seed(engine)
    before = _rev(engine)
    _run(engine, "UPDATE episode SET n_calls = 9, last_ts = 5.0, harness = 'pi' WHERE "
         "episode_id = 'e1'")  # fmt: skip
    _run(engine, "UPDATE result SET harness = 'pi', workspace_after = '/w' WHERE id = 1")
    # Ingest rewrites every column of an episode it adds calls to, and of a result line it
    # loads again: the same values count as no change.
    _run(engine, "UPDATE episode SET episode_id = episode_id, task_id = task_id, "
         "model_role = model_role, n_calls = n_calls + 1")  # fmt: skip
    _run(
        engine,
        "UPDATE result SET episode_id = episode_id, task_id = task_id, model_role = model_role, "
        "reward = reward, checks_json = checks_json, rubric_json = rubric_json",
    )
    with Session(engine) as s:
        s.add(Review(task_id="t1", decision="accept", reviewer="ana"))
        s.commit()
    # A write that is rolled back leaves nothing either.
    with pytest.raises(RuntimeError), engine.begin() as conn:
        conn.execute(sa.text("UPDATE result SET reward = 0.0 WHERE id = 1"))
        raise RuntimeError("rolled back")
    assert _rev(engine) == before


def test_a_summary_under_the_revision_gives_the_store_queue(engine):
    _seed(engine)
    with Session(engine) as s:
        summary = attempt_summary(s, DEFAULT_SETTINGS)
        assert summary == {"t1": (1, {"strong": (1.0, 1)}), "t2": (1, {})}
        cached = [r.as_dict() for r in task_queue(s, DEFAULT_SETTINGS, summary)]
        assert cached == [r.as_dict() for r in task_queue(s, DEFAULT_SETTINGS)]


def test_a_store_migrated_from_0011_keeps_the_revision(tmp_path):
    url = fresh_url(tmp_path, "m11")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        migrations._run(conn, lambda script, rev: script._upgrade_revs("0011", rev))
        conn.execute(sa.text("INSERT INTO episode (episode_id, n_calls, source_kind) VALUES "
                             "('old', 1, 'exchange')"))  # fmt: skip
    with engine.begin() as conn:
        assert migrations.current(conn) == "0011"
        assert migrations.upgrade(conn) == ["0012"]
    before = _rev(engine)
    _run(engine, "UPDATE episode SET task_id = 't1' WHERE episode_id = 'old'")
    assert _rev(engine) != before
    engine.dispose()


@pytest.mark.skipif(not on_postgres(), reason="SQLite has one writer at a time")
def test_concurrent_writers_on_postgres_never_wait_and_every_commit_counts(engine):
    """Each writing transaction counts in its own row: a writer does not wait on another's
    uncommitted change, and a commit that lands after a later-started one still moves it."""
    _seed(engine)
    a = engine.connect()
    try:
        a.execute(sa.text("UPDATE result SET reward = 0.0 WHERE episode_id = 'e1'"))  # open
        with engine.begin() as b:
            b.execute(sa.text("SET LOCAL lock_timeout = '2s'"))
            b.execute(sa.text("UPDATE episode SET model_role = 'strong' WHERE episode_id = 'e2'"))
        after_b = _rev(engine)
        a.commit()
    finally:
        a.close()
    assert _rev(engine) != after_b


def _rows(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.text("SELECT COUNT(*) FROM attempts_change")).scalar_one()


def _compact(engine) -> int:
    with engine.begin() as conn:
        return compact_attempts(conn)


def test_compaction_keeps_the_revision_and_it_still_grows(engine):
    """Folding the rows into one never gives an earlier revision, and later changes still
    move it (SQLite has one row: nothing to fold)."""
    _seed(engine)
    seen = [_rev(engine)]
    for i in range(5):
        _run(engine, "UPDATE result SET reward = :r WHERE episode_id = 'e1'", r=i / 10)
        seen.append(_rev(engine))
    folded = _compact(engine)
    assert _rev(engine) == seen[-1]
    assert _rows(engine) == 1
    assert folded == (6 if on_postgres() else 0)  # the seed's commit, then 5 (PostgreSQL)
    for i in range(3):
        _run(engine, "UPDATE result SET reward = :r WHERE episode_id = 'e1'", r=0.9 - i / 10)
        seen.append(_rev(engine))
        _compact(engine)
        assert _rev(engine) == seen[-1]
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


@pytest.mark.skipif(not on_postgres(), reason="SQLite has one writer at a time")
def test_compaction_while_a_writer_is_open_loses_none_of_its_change(engine):
    """The open writer's row is not visible to the compaction: it stays, and counts when it
    commits. A compaction inside a writer's own transaction folds its row with the rest."""
    _seed(engine)
    a = engine.connect()
    try:
        a.execute(sa.text("UPDATE result SET reward = 0.0 WHERE episode_id = 'e1'"))  # open
        before = _rev(engine)
        _compact(engine)
        assert _rev(engine) == before
        a.commit()
    finally:
        a.close()
    assert _rev(engine) == before + 1
    with engine.begin() as b:
        b.execute(sa.text("UPDATE result SET reward = 1.0 WHERE episode_id = 'e1'"))
        compact_attempts(b)  # its own row, uncommitted, folded in the same transaction
    assert _rev(engine) == before + 2
    assert _rows(engine) == 1


@pytest.mark.skipif(not on_postgres(), reason="SQLite has one row: nothing to fold")
def test_an_ingest_leaves_the_revision_folded(tmp_path):
    from pathlib import Path

    from clawviz.jobs import ingest_paths
    from clawviz.store.db import get_engine

    engine = get_engine(fresh_url(tmp_path, "ing"))
    samples = Path(__file__).resolve().parent.parent / "sample_logs"
    with Session(engine) as s:
        ingest_paths([samples / "exchanges" / "openclaw", samples / "results.jsonl"], session=s)
    assert _rev(engine) > 0
    assert _rows(engine) == 1
