"""Analysis cache in the store: persisted decisions per settings hash, recomputed on change."""

from __future__ import annotations

import orjson
import pytest
from recon_helpers import Ep, tool_result, user
from sqlmodel import Session, create_engine, select

from clawviz.cli.explain import explain_rows, explain_text
from clawviz.jobs import analyse as analysis
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import calls as store
from clawviz.store.db import init_db
from clawviz.store.models import DecisionRow, EpisodeStatus, Result
from tests.dburl import fresh_url, memory_engine


@pytest.fixture
def session():
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        yield s


def add_episode(session, e: Ep, reward=None, checks=None, harness="claude_code"):
    store.write_calls(session, e.calls, None)
    store.refresh_episodes(session, [e.episode_id])
    if reward is not None or checks is not None:
        session.add(
            Result(
                episode_id=e.episode_id,
                task_id="task_1",
                harness=harness,
                reward=reward,
                checks_json=orjson.dumps(checks or {}).decode(),
            )
        )
    session.commit()


def retry_episode(eid, harness="claude_code"):
    e = Ep(episode_id=eid, harness=harness)
    cs = e.chain(3)
    e.turn(cs[1], tool_result("t2", "out 2"), status=529)
    e.turn(cs[2], tool_result("t3", "out 3"))
    return e


def count_runs(monkeypatch):
    calls = []
    real = analysis.analyse_episode

    def spy(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(analysis, "analyse_episode", spy)
    return calls


def test_ensure_analysis_persists_and_reads_back(session):
    e = retry_episode("e1")
    add_episode(session, e, reward=1.0)
    seen = []
    analysis.ensure_analysis(session, progress=lambda d, t, m: seen.append((d, t)))
    assert seen[-1] == (1, 1)
    got = analysis.episode_analysis(session, "e1")
    want = analysis.analyse_episode(e.calls, reward=1.0)
    assert got.status == want.status == "kept"
    assert {k: (d.role, d.state, d.reason, d.parent_call) for k, d in got.decisions.items()} == {
        k: (d.role, d.state, d.reason, d.parent_call) for k, d in want.decisions.items()
    }
    assert [p.call_ids for p in got.paths] == [p.call_ids for p in want.paths]
    st = session.exec(select(EpisodeStatus)).one()
    assert orjson.loads(st.settings_json)["settings"]["max_leaves"] == 8
    assert st.settings_hash == DEFAULT_SETTINGS.settings_hash


def test_ensure_analysis_is_cached_and_recomputes_on_change(session, monkeypatch):
    add_episode(session, retry_episode("e1"), reward=1.0)
    runs = count_runs(monkeypatch)
    analysis.ensure_analysis(session)
    analysis.ensure_analysis(session)
    assert len(runs) == 1
    other = DEFAULT_SETTINGS.with_(max_leaves=1)
    analysis.ensure_analysis(session, other)
    assert len(runs) == 2
    hashes = set(session.exec(select(EpisodeStatus.settings_hash)).all())
    assert hashes == {DEFAULT_SETTINGS.settings_hash, other.settings_hash}
    assert analysis.episode_analysis(session, "e1", other).status == "kept"
    # A result arriving later changes the inputs: recomputed under every setting asked for.
    result = session.exec(select(Result)).one()
    result.reward = 0.2
    session.add(result)
    session.commit()
    a = analysis.episode_analysis(session, "e1")
    assert len(runs) == 3
    assert [r.code for r in a.reasons] == ["below_reward_threshold"]


def test_grpo_refreshed_when_a_group_member_arrives(session):
    add_episode(session, retry_episode("a1"), reward=1.0)
    assert analysis.episode_analysis(session, "a1").advantage == 0.0
    add_episode(session, retry_episode("a2"), checks={"x": 0.0, "y": 0.0})
    add_episode(session, retry_episode("b1", harness="openclaw"), reward=0.0, harness="openclaw")
    a1 = analysis.episode_analysis(session, "a1")
    a2 = analysis.episode_analysis(session, "a2")
    assert a1.advantage == pytest.approx(0.5 / (0.5 + 1e-6))
    assert a2.advantage == pytest.approx(-0.5 / (0.5 + 1e-6))
    assert analysis.episode_analysis(session, "b1").advantage == 0.0
    assert {p.advantage for p in a1.paths if p.state == "kept"} == {a1.advantage}


def test_missing_episode_raises(session):
    with pytest.raises(KeyError):
        analysis.episode_analysis(session, "nope")


def test_unattached_calls_get_decisions(session):
    e = Ep(episode_id="x")
    e.chain(2)
    for c in e.calls:
        c.episode_id = None
    store.write_calls(session, e.calls, None)
    session.commit()
    analysis.ensure_analysis(session)
    rows = session.exec(select(DecisionRow)).all()
    assert {(r.episode_id, r.state, r.reason) for r in rows} == {("", "auxiliary", "unattached")}


def test_explain_rows_and_text(session):
    e = retry_episode("e1")
    add_episode(session, e, reward=1.0)
    rows = explain_rows(session, "e1")
    assert [r["call_id"] for r in rows] == [c.call_id for c in e.calls]
    failed = rows[3]
    assert failed["state"] == "failed" and failed["reason"] == "failed_http"
    assert failed["http_status"] == 529
    assert failed["source"] == {"file": "e1.jsonl", "line": 4}
    assert rows[4]["parent_call"] == e.calls[2].call_id
    for r in rows[:3] + rows[4:]:
        assert r["state"] == "kept" and r["segment"] == 0 and r["thread"] == "main"
        assert r["reward"] == 1.0 and r["advantage"] == 0.0
    keys = {
        "call_id",
        "source",
        "seq",
        "role",
        "state",
        "reason",
        "parent_call",
        "segment",
        "retry_of",
        "thread",
        "reward",
        "advantage",
        "endpoint",
        "http_status",
    }
    assert keys <= set(rows[0])
    text = explain_text(session, "e1")
    assert "episode e1: kept" in text
    # Call 4 (line 4) re-sent call 3's request and got a 529; call 5 extends call 3.
    assert "call 4  main  failed(failed_http)" in text
    assert "retry of call 3 (identical re-send); replaced by call 3 (kept: the one a later" in text
    assert failed["call"] == "4" and "retry of call 3 (identical re-send)" in failed["retry"]
    lines = text.splitlines()
    line5 = next(ln for ln in lines if ln.lstrip().startswith("call 5 "))
    line3 = next(ln for ln in lines if ln.lstrip().startswith("call 3 "))
    assert len(line5) - len(line5.lstrip()) > len(line3) - len(line3.lstrip())


def test_explain_dropped_episode_lists_reasons(session):
    e = Ep(episode_id="d1")
    root = e.call([user("go")])
    for i in range(9):
        e.turn(root, user(f"v{i}"))
    add_episode(session, e)
    text = explain_text(session, "d1")
    assert "episode d1: dropped (too_many_branches, missing_reward)" in text
    assert "9 leaves > max_leaves 8" in text


def test_ensure_analysis_costs_three_small_queries_when_nothing_changed(session):
    """The settings' mark (a primary-key read), the change queue (empty) and the unattached
    counts: none reads every episode (issue 26: O(changed); tests/test_staleness_queue.py)."""
    from sqlalchemy import event

    add_episode(session, retry_episode("e1"), reward=1.0)
    add_episode(session, retry_episode("e2"), reward=0.0)
    analysis.ensure_analysis(session)
    statements = []
    engine = session.get_bind()
    listener = lambda *a, **k: statements.append(a[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        analysis.ensure_analysis(session)
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert len(statements) <= 3, statements
    assert "episode_dirty" in statements[1], statements


def test_calls_moved_to_another_episode_are_reanalysed(session):
    from sqlalchemy import update

    from clawviz.store.models import CallRow, Episode

    add_episode(session, retry_episode("old"), reward=1.0)
    analysis.ensure_analysis(session)
    session.execute(update(CallRow).values(episode_id="new"))
    session.execute(update(Episode).values(episode_id="new"))
    session.commit()
    a = analysis.episode_analysis(session, "new")
    assert len(a.decisions) == 5
    assert set(session.exec(select(DecisionRow.episode_id)).all()) == {"new"}


def test_explain_rows_carry_importance_ratios(session):
    from recon_helpers import with_rollout

    e = retry_episode("r1")
    with_rollout(
        e.calls[0],
        output_token_ids=[1, 2],
        output_logprobs=[-1.0, -1.0],
        trainer_logprobs=[-1.0, 1.0],
    )
    add_episode(session, e, reward=1.0)
    rows = explain_rows(session, "r1")
    assert rows[0]["importance"] == {"mean_ratio": 1.5, "clipped_fraction": 0.5}
    assert rows[0]["output_tokens"] == 10
    assert rows[1]["importance"] is None


def test_concurrent_writer_is_tolerated(tmp_path):
    url = fresh_url(tmp_path, "c")
    engine = create_engine(url)
    init_db(engine)
    with Session(engine) as s1, Session(engine) as s2:
        add_episode(s1, retry_episode("e1"), reward=1.0)
        # s2 decides what is stale, then s1 stores the same decisions before s2 writes.
        real = analysis.persist_analyses
        raced = []

        def persist_after_other(session, *a, **kw):
            if session is s2 and not raced:
                raced.append(1)
                analysis.ensure_analysis(s1)
            return real(session, *a, **kw)

        analysis.persist_analyses = persist_after_other
        try:
            analysis.ensure_analysis(s2)
        finally:
            analysis.persist_analyses = real
        assert raced
        assert analysis.episode_analysis(s2, "e1").status == "kept"


def test_batches_split_a_group_and_still_agree(session, monkeypatch):
    # Each batch commits with its groups' GRPO refreshed; a group split across batches must
    # end with the same advantages as when analysed in one batch.
    for eid, reward in (("g1", 1.0), ("g2", 0.0), ("g3", 0.5)):
        add_episode(session, retry_episode(eid), reward=reward)
    monkeypatch.setattr(analysis, "BATCH", 1)
    commits = []
    real_commit = session.commit
    monkeypatch.setattr(session, "commit", lambda: (commits.append(1), real_commit())[1])
    analysis.ensure_analysis(session)
    assert len(commits) >= 3
    split = {e: analysis.episode_analysis(session, e).advantage for e in ("g1", "g2", "g3")}
    other = DEFAULT_SETTINGS.with_(max_leaves=7)
    monkeypatch.setattr(analysis, "BATCH", 200)
    whole = {e: analysis.episode_analysis(session, e, other).advantage for e in split}
    assert split == pytest.approx(whole)
    assert split["g1"] > 0 > split["g2"]
