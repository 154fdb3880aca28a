"""The command line's direct SQLite read agrees with the full path, and steps aside when stale."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select
from test_formats_fixtures import claude_code_episode, jsonl

from clawviz.cli.main import episode_rows, main
from clawviz.jobs import analyse
from clawviz.jobs.ingest import ingest_paths
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import calls as store
from clawviz.store import decisions, fastread, models
from clawviz.store.db import get_engine
from clawviz.store.models import CallRow, DecisionRow
from clawviz.types import Call
from tests.dburl import on_postgres

SAMPLE_LOGS = Path(__file__).resolve().parents[1] / "sample_logs"

pytestmark = pytest.mark.skipif(on_postgres(), reason="the direct read is for SQLite files")


def _stale(session, settings=DEFAULT_SETTINGS) -> int:
    """What the full path would recompute (its own query), counted as fastread counts."""
    n = len(decisions.stale_episodes(session, settings))
    unattached = session.exec(select(CallRow).where(CallRow.episode_id.is_(None))).all()
    done = session.exec(
        select(DecisionRow).where(
            DecisionRow.settings_hash == settings.settings_hash, DecisionRow.episode_id == ""
        )
    ).all()
    return n + (len(unattached) != len(done))


@pytest.fixture
def url(tmp_path):
    if not (SAMPLE_LOGS / "exchanges").is_dir():
        pytest.skip("sample_logs/ is missing")
    u = f"sqlite:///{tmp_path / 'fast.db'}"
    with Session(get_engine(u)) as s:
        ingest_paths([SAMPLE_LOGS / "exchanges", SAMPLE_LOGS / "results.jsonl"], session=s)
    return u


def test_rows_of_a_fresh_store_equal_the_full_path(url):
    fast = fastread.episode_rows(url, DEFAULT_SETTINGS)
    with Session(get_engine(url)) as s:
        assert _stale(s) == 0
        full = episode_rows(s)
    assert fast is not None and len(fast) > 10
    assert fast == full
    assert any(r["reward"] is not None for r in fast)
    assert any(r["reasons"] for r in fast)


def test_stale_counts_agree_with_the_full_path_and_a_stale_store_is_not_read(url, tmp_path):
    con = fastread._connect(url)
    assert con is not None
    other = DEFAULT_SETTINGS.with_(grpo_no_std=not DEFAULT_SETTINGS.grpo_no_std)
    with Session(get_engine(url)) as s:
        n_episodes = len(store.list_episodes(s))
        # Other settings: every episode is stale under them.
        assert fastread.n_stale(con, other) == _stale(s, other) == n_episodes
        assert fastread.episode_rows(url, other) is None
        # New calls for one episode, written without analysis (as an interrupted ingest would).
        records = claude_code_episode(session="late-episode")
        log = tmp_path / "late.jsonl"
        log.write_text(jsonl(records))
        first = store.list_episodes(s)[0].episode_id
        calls = [
            Call(call_id=f"late:{i}", source_file="late.jsonl", line=i, endpoint="non_model")
            for i in range(2)
        ]
        for c in calls:
            c.episode_id = first
        store.write_calls(s, calls, None)
        store.refresh_episodes(s, [first])
        s.commit()
        assert fastread.n_stale(con, DEFAULT_SETTINGS) == _stale(s) == 1
        assert fastread.episode_rows(url, DEFAULT_SETTINGS) is None
        # A call no episode claims: the unattached analysis is missing.
        store.write_calls(
            s, [Call(call_id="lost:1", source_file="x", line=1, endpoint="non_model")], None
        )
        s.commit()
        assert fastread.n_stale(con, DEFAULT_SETTINGS) == _stale(s) == 2
        analyse.ensure_analysis(s)
        assert fastread.n_stale(con, DEFAULT_SETTINGS) == _stale(s) == 0
        assert fastread.episode_rows(url, DEFAULT_SETTINGS) == episode_rows(s)
    con.close()


def test_other_databases_and_missing_files_take_the_full_path(tmp_path):
    assert fastread.episode_rows("sqlite://", DEFAULT_SETTINGS) is None
    assert fastread.episode_rows(f"sqlite:///{tmp_path / 'none.db'}", DEFAULT_SETTINGS) is None
    assert fastread.episode_rows("postgresql://u@127.0.0.1/x", DEFAULT_SETTINGS) is None
    assert not (tmp_path / "none.db").exists()


def test_episodes_command_on_a_stale_store_analyses_first(tmp_path, capsys):
    u = f"sqlite:///{tmp_path / 'stale.db'}"
    with Session(get_engine(u)) as s:
        store.write_calls(
            s,
            [
                Call(call_id=f"c{i}", source_file="f", line=i, endpoint="non_model", episode_id="e")
                for i in range(3)
            ],
            None,
        )
        store.refresh_episodes(s, ["e"])
        s.commit()
    assert fastread.episode_rows(u, DEFAULT_SETTINGS) is None
    assert main(["--db", u, "episodes"]) == 0
    out = capsys.readouterr().out
    assert "unknown" not in out.split("\n", 1)[1]
    assert fastread.episode_rows(u, DEFAULT_SETTINGS) is not None


def test_nul_marked_texts_read_back_as_the_orm_reads_them():
    assert fastread.NUL_PREFIX == models.NUL_PREFIX
    marked = models.NulSafeString().process_bind_param(models.NUL_PREFIX + "x", None)
    assert fastread.restore_nul(marked) == models.restore_nul(marked) == models.NUL_PREFIX + "x"
    assert fastread.restore_nul("plain") == "plain"


def test_head_revision_is_alembics_and_an_older_store_takes_the_full_path(url):
    from clawviz.store import migrations

    assert fastread.head_revision() == migrations.HEAD
    assert fastread.episode_rows(url, DEFAULT_SETTINGS) is not None
    import sqlite3

    con = sqlite3.connect(fastread.sqlite_path(url))
    con.execute("UPDATE alembic_version SET version_num = '0001'")
    con.commit()
    con.close()
    assert fastread.episode_rows(url, DEFAULT_SETTINGS) is None
