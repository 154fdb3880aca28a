"""The SQLite page cache per use (`store.bulk_cache`): large for the work that reads the whole
store (ingest, analysis, export), SQLite's default for the app's views, and never left large on
a pooled connection a view borrows next."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import Session

from clawviz.export import run as export_run
from clawviz.jobs import analyse as analyse_mod
from clawviz.jobs import ensure_analysis, ingest_paths
from clawviz.jobs import ingest as ingest_mod
from clawviz.settings import Settings
from clawviz.store import bulk_cache
from clawviz.store.db import BULK_CACHE_KB, SQLITE_CACHE_KB, get_engine
from tests.dburl import on_postgres

pytestmark = pytest.mark.skipif(on_postgres(), reason="a SQLite connection's page cache")

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
SMALL, LARGE = -SQLITE_CACHE_KB, -BULK_CACHE_KB


def _cache(session: Session) -> int:
    return int(session.connection().exec_driver_sql("PRAGMA cache_size").scalar_one())


@pytest.fixture
def engine(tmp_path):
    return get_engine(f"sqlite:///{tmp_path / 'store.db'}")


def test_views_get_the_small_cache_and_bulk_work_the_large_one(engine):
    assert SMALL != LARGE
    with Session(engine) as s:
        assert _cache(s) == SMALL
    with bulk_cache(), Session(engine) as s:
        assert _cache(s) == LARGE
    # The same pooled connection, lent to a view next: the small cache again.
    with Session(engine) as s:
        assert _cache(s) == SMALL


def test_a_session_holding_its_connection_is_switched_and_switched_back(engine):
    with Session(engine) as s:
        s.execute(text("SELECT 1"))  # holds its connection from here on
        with bulk_cache(s):
            assert _cache(s) == LARGE
            with bulk_cache(s):  # nested (an export that runs the analysis)
                assert _cache(s) == LARGE
            assert _cache(s) == LARGE
        assert _cache(s) == SMALL


def test_another_thread_keeps_the_small_cache_meanwhile(engine):
    seen: list[int] = []
    inside, done = threading.Event(), threading.Event()

    def view() -> None:
        inside.wait(10)
        with Session(engine) as s:
            seen.append(_cache(s))
        done.set()

    t = threading.Thread(target=view)
    t.start()
    with bulk_cache(), Session(engine) as s:
        assert _cache(s) == LARGE
        inside.set()
        assert done.wait(10)
    t.join()
    assert seen == [SMALL]


def _spy(monkeypatch, module, name: str, seen: list[int], session_of) -> None:
    real = getattr(module, name)

    def spy(*args, **kwargs):
        seen.append(_cache(session_of(args, kwargs)))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)


def test_ingest_analysis_and_export_run_with_the_large_cache(engine, tmp_path, monkeypatch):
    seen: dict[str, list[int]] = {"ingest": [], "analysis": [], "export": []}
    _spy(monkeypatch, ingest_mod, "index_pending", seen["ingest"], lambda a, k: a[0])
    _spy(monkeypatch, analyse_mod, "persist_analyses", seen["analysis"], lambda a, k: a[0])
    with Session(engine) as s:
        ingest_paths([SAMPLES / "exchanges" / "openclaw", SAMPLES / "results.jsonl"], session=s)
    assert seen["ingest"] and set(seen["ingest"]) == {LARGE}
    assert seen["analysis"] and set(seen["analysis"]) == {LARGE}  # the analysis at ingest

    seen["analysis"].clear()
    other = Settings(reward_threshold=0.9)
    with Session(engine) as s:
        ensure_analysis(s, other)
    assert seen["analysis"] and set(seen["analysis"]) == {LARGE}

    with Session(engine) as s:
        real_rows = export_run.episode_rows

        def rows(*args, **kwargs):
            seen["export"].append(_cache(s))
            return real_rows(*args, **kwargs)

        monkeypatch.setattr(export_run, "episode_rows", rows)
        export_run.run_export(s, "sft", tmp_path / "out.jsonl")
        assert seen["export"] and set(seen["export"]) == {LARGE}
        assert _cache(s) == SMALL  # given back at the end
    with Session(engine) as s:
        assert _cache(s) == SMALL
