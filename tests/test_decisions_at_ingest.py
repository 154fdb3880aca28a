"""Decisions are made at the end of ingest from the calls in memory; episodes and explain read."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select
from test_formats_fixtures import claude_code_episode, jsonl

from clawviz import store  # the stage package: the analysis job looks its names up there
from clawviz.cli import explain
from clawviz.cli.main import episode_rows
from clawviz.jobs import analyse as analyse_job
from clawviz.jobs import ingest as ingest_mod
from clawviz.jobs.ingest import ingest_paths
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import decisions
from clawviz.store.db import get_engine
from clawviz.store.models import AnalysisMark, DecisionRow, Episode, EpisodeStatus
from tests.dburl import fresh_url

SAMPLE_LOGS = Path(__file__).resolve().parents[1] / "sample_logs"


def _decisions(session):
    rows = session.exec(select(DecisionRow).order_by(DecisionRow.call_id)).all()
    sts = session.exec(select(EpisodeStatus).order_by(EpisodeStatus.episode_id)).all()
    strip = {"computed_at"}
    return (
        [r.model_dump() for r in rows],
        [{k: v for k, v in s.model_dump().items() if k not in strip} for s in sts],
    )


@pytest.fixture
def spy(monkeypatch):
    """Counts of reconstructions and of calls reloaded from the store for analysis."""
    counts = {"analysed": 0, "reloaded": 0}
    real_analyse, real_many = analyse_job.analyse_episode, store.load_calls_many

    def analyse(*args, **kwargs):
        counts["analysed"] += 1
        return real_analyse(*args, **kwargs)

    def load_many(session, ids):
        counts["reloaded"] += len(ids)
        return real_many(session, ids)

    monkeypatch.setattr(analyse_job, "analyse_episode", analyse)
    monkeypatch.setattr(store, "load_calls_many", load_many)
    return counts


def test_ingest_analyses_every_episode_from_memory_as_a_reload_would(tmp_path, spy):
    if not (SAMPLE_LOGS / "exchanges").is_dir():
        pytest.skip("sample_logs/ is missing")
    with Session(get_engine(fresh_url(tmp_path, "s"))) as s:
        ingest_paths([SAMPLE_LOGS / "exchanges", SAMPLE_LOGS / "results.jsonl"], session=s)
        n_episodes = len(s.exec(select(Episode)).all())
        assert n_episodes > 10
        assert spy["analysed"] == n_episodes
        assert spy["reloaded"] == 0  # every episode came from the calls ingest held
        at_ingest = _decisions(s)
        assert len(at_ingest[1]) == n_episodes
        # The same decisions when every episode is reloaded from the store instead.
        s.exec(DecisionRow.__table__.delete())  # type: ignore[call-overload]
        s.exec(EpisodeStatus.__table__.delete())  # type: ignore[call-overload]
        # Forgetting the analyses forgets their marks too (the staleness check follows the
        # change queue of a marked hash; issue 26): the next check is the full one.
        s.exec(AnalysisMark.__table__.delete())  # type: ignore[call-overload]
        s.commit()
        analyse_job.ensure_analysis(s)
        assert spy["reloaded"] == n_episodes
        assert _decisions(s) == at_ingest


def test_episodes_and_explain_after_ingest_reconstruct_nothing(tmp_path, spy):
    log = tmp_path / "cc.jsonl"
    log.write_text(jsonl(claude_code_episode()))
    with Session(get_engine(fresh_url(tmp_path, "s"))) as s:
        ingest_paths([log], session=s)
        assert spy["analysed"] == 1
        rows = episode_rows(s)
        (eid,) = [r["episode_id"] for r in rows]
        assert rows[0]["status"] in ("kept", "dropped")
        explain.explain_rows(s, eid, DEFAULT_SETTINGS)
        explain.explain_text(s, eid, DEFAULT_SETTINGS)
    assert spy == {"analysed": 1, "reloaded": 0}


def test_an_episode_spread_over_two_ingests_is_reloaded_whole(tmp_path, spy):
    records = claude_code_episode()
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(jsonl(records[:2]))
    b.write_text(jsonl(records[2:]))
    with Session(get_engine(fresh_url(tmp_path, "s"))) as s:
        ingest_paths([a], session=s)
        assert spy == {"analysed": 1, "reloaded": 0}
        ingest_paths([b], session=s)
        # Ingest held only b's calls: the episode's a-calls live in the store alone.
        assert spy == {"analysed": 2, "reloaded": 1}
        both = _decisions(s)
        (st,) = both[1]
        assert len(both[0]) == len(records)
        assert s.get(Episode, st["episode_id"]).n_calls == len(records)


def test_held_calls_beyond_the_limit_are_reloaded_and_decide_the_same(tmp_path, spy, monkeypatch):
    log = tmp_path / "two.jsonl"
    log.write_text(jsonl(claude_code_episode() + claude_code_episode(session="other-session")))
    monkeypatch.setattr(ingest_mod, "HOLD_CALLS", 4)
    with Session(get_engine(fresh_url(tmp_path, "s"))) as s:
        ingest_paths([log], session=s)
        assert len(s.exec(select(Episode)).all()) == spy["analysed"] == 2
        assert spy["reloaded"] >= 1  # 6 calls, at most 4 held: an episode came from the store
        bounded = _decisions(s)
    monkeypatch.setattr(ingest_mod, "HOLD_CALLS", 1000)
    with Session(get_engine(fresh_url(tmp_path, "t"))) as s:
        before = spy["reloaded"]
        ingest_paths([log], session=s)
        assert spy["reloaded"] == before
        assert _decisions(s) == bounded


def test_decision_rows_with_nul_marked_text_take_the_encoding_path(tmp_path):
    from clawviz.store.models import NUL_PREFIX

    with Session(get_engine(fresh_url(tmp_path, "nul"))) as s:
        row = {
            "settings_hash": "h",
            "episode_id": "e",
            "call_id": "c",
            "role": "main",
            "state": "kept",
            "reason": NUL_PREFIX + "odd",
        }
        decisions._insert_decisions(s, [row, dict(row, call_id="d", reason="plain")])
        s.commit()
        got = {r.call_id: r.reason for r in s.exec(select(DecisionRow))}
    assert got == {"c": NUL_PREFIX + "odd", "d": "plain"}


def test_ingest_analyses_only_the_episodes_it_touched(tmp_path):
    """Issue 18: a writer recomputes exactly the episodes it touched (its calls, its results);
    an episode another writer left unanalysed is not redone by it, and is analysed on first
    read (`ensure_analysis` without `only`)."""
    cc = SAMPLE_LOGS / "exchanges" / "claude-code"
    if not cc.is_dir():
        pytest.skip("sample_logs/ is missing")
    first, second = "t0001-claude-code-a1", "t0001-claude-code-a2"
    with Session(get_engine(fresh_url(tmp_path, "touched"))) as s:
        ingest_paths([cc / f"{first}.jsonl"], session=s)
        # As if another writer had committed `first`'s calls and not yet its decisions.
        for st in s.exec(select(EpisodeStatus)).all():
            s.delete(st)
        for d in s.exec(select(DecisionRow)).all():
            s.delete(d)
        # ... and with no mark of this analysis (its triggers would have queued `first`).
        s.exec(AnalysisMark.__table__.delete())  # type: ignore[call-overload]
        s.commit()
        ingest_paths([cc / f"{second}.jsonl"], session=s)
        analysed = {st.episode_id for st in s.exec(select(EpisodeStatus)).all()}
        assert analysed == {second}
        # A results file touches the episodes it gives a reward to: they are redone with it.
        results = tmp_path / "results.jsonl"
        lines = [
            line
            for line in (SAMPLE_LOGS / "results.jsonl").read_text().splitlines()
            if f'"{second}"' in line
        ]
        assert len(lines) == 1
        results.write_text(lines[0] + "\n")
        ingest_paths([results], session=s)
        st = s.exec(select(EpisodeStatus).where(EpisodeStatus.episode_id == second)).one()
        assert st.reward == pytest.approx(1.0)  # its line in sample_logs/results.jsonl: reward 1.0
        assert {x.episode_id for x in s.exec(select(EpisodeStatus)).all()} == {second}
        analyse_job.ensure_analysis(s, DEFAULT_SETTINGS)
        assert {x.episode_id for x in s.exec(select(EpisodeStatus)).all()} == {first, second}
