"""Two concurrent ingests into one SQLite store (issue 26 §2): the second writer waits for the
first, however long the first holds the write lock, and neither fails with "database is locked".

The store's busy timeout is lowered to 0.3 s for the test, so a load of a few seconds stands for
one longer than any busy timeout (30 s before: a 1 GB log)."""

from __future__ import annotations

import sqlite3
import threading
import time

import orjson
import pytest
from sqlalchemy import event, func
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select
from test_formats_fixtures import anthropic_record, user

from clawviz.jobs.ingest import ingest_paths
from clawviz.store import db
from clawviz.store.db import get_engine
from clawviz.store.models import CallRow, Meta, RejectedLine
from tests.dburl import fresh_url, on_postgres

pytestmark = pytest.mark.skipif(on_postgres(), reason="SQLite's single writer")

BIG, SMALL = 12_000, 20


def _log(path, n: int, episode: str, bad_line: bool = False) -> None:
    with path.open("wb") as f:
        if bad_line:
            f.write(b"not json\n")
        for i in range(n):
            rec = anthropic_record(
                [user(f"{episode} step {i} " + "context " * 40)],
                ts=1763542013.0 + i,
                clawviz={"episode_id": episode},
            )
            f.write(orjson.dumps(rec) + b"\n")


def test_two_concurrent_ingests_both_load_everything(tmp_path, monkeypatch):
    retries: list[float] = []

    class _Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(s: float) -> None:
            retries.append(s)
            time.sleep(s)

    monkeypatch.setattr(db, "time", _Clock)
    url = fresh_url(tmp_path, "writers")
    engine = get_engine(url)

    @event.listens_for(engine, "connect")
    def _short_busy_timeout(dbapi_conn, _record) -> None:
        dbapi_conn.execute("PRAGMA busy_timeout=300")

    engine.dispose()  # pooled connections reopen with the short timeout
    big, small = tmp_path / "big.jsonl", tmp_path / "small.jsonl"
    _log(big, BIG, "ep-big")
    _log(small, SMALL, "ep-small", bad_line=True)
    started = threading.Event()
    reports: dict[str, object] = {}
    errors: list[BaseException] = []
    times: dict[str, float] = {}

    def run(name, path) -> None:
        t0 = time.monotonic()
        try:
            with Session(engine) as s:
                reports[name] = ingest_paths(
                    path, session=s, progress=lambda d, t, f: started.set() if d else None
                )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        times[name] = time.monotonic() - t0

    a = threading.Thread(target=run, args=("big", big))
    a.start()
    assert started.wait(60)
    time.sleep(0.5)  # the big file's transaction holds the write lock now
    b = threading.Thread(target=run, args=("small", small))
    b.start()
    a.join(300)
    b.join(300)
    assert errors == []
    for name, n in (("big", BIG), ("small", SMALL)):
        rep = reports[name]
        assert rep.errors == [], (name, rep.errors)  # type: ignore[attr-defined]
        assert rep.n_calls == n, name  # type: ignore[attr-defined]
        assert not [w for w in rep.warnings if "decisions not stored" in w.reason]  # type: ignore[attr-defined]
    assert times["big"] > 2, times  # the lock was held for longer than the busy timeout
    with Session(engine) as s:
        counts = dict(
            s.exec(select(CallRow.episode_id, func.count()).group_by(CallRow.episode_id)).all()
        )
    assert counts == {"ep-big": BIG, "ep-small": SMALL}
    assert retries, "the small file never waited past the busy timeout"
    # Loaded again after each wait: its one bad line is reported and kept once, not per try.
    assert [r.line for r in reports["small"].rejected] == [1]  # type: ignore[attr-defined]
    with Session(engine) as s:
        assert len(s.exec(select(RejectedLine)).all()) == 1


def test_retry_locked_waits_out_a_writer_that_holds_the_lock_past_the_busy_timeout(tmp_path):
    url = fresh_url(tmp_path, "held")
    engine = get_engine(url)

    @event.listens_for(engine, "connect")
    def _short_busy_timeout(dbapi_conn, _record) -> None:
        dbapi_conn.execute("PRAGMA busy_timeout=200")

    engine.dispose()
    other = sqlite3.connect(
        str(tmp_path / "held.db"), isolation_level=None, check_same_thread=False
    )
    other.execute("BEGIN IMMEDIATE")  # another writer, holding the lock for 1.5 s
    release = threading.Timer(1.5, lambda: other.execute("COMMIT"))
    release.start()

    def write(s: Session) -> None:
        s.merge(Meta(key="probe", value="1"))
        s.commit()

    try:
        with Session(engine) as s, pytest.raises(OperationalError, match="database is locked"):
            write(s)  # the busy timeout alone gives up
        with Session(engine) as s:
            t0 = time.monotonic()
            db.retry_locked(s, lambda: write(s), limit_s=20)
            assert time.monotonic() - t0 > 1.0
            assert s.get(Meta, "probe") is not None
    finally:
        release.join()
        other.close()
