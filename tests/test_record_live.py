"""`clawviz record --db`: exchanges show up in the store while the proxy runs."""

from __future__ import annotations

import io
import time

import httpx
import pytest
from record_support import LoopThread, Scripted
from sqlmodel import Session, select

from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import get_engine
from clawviz.store.models import CallRow, Episode, Source
from tests.dburl import fresh_url


def _wait_for(fn, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.05)
    return fn()


def test_each_exchange_reaches_the_store_while_recording(tmp_path):
    lt = LoopThread()
    scripted = Scripted()
    port = lt.start_scripted(scripted)
    url = fresh_url(tmp_path, "live")
    out = tmp_path / "log"
    proxy = lt.start_proxy(
        f"http://127.0.0.1:{port}", str(out), db_url=url, db_window=0.05, stderr=io.StringIO()
    )
    engine = get_engine(url)

    def calls(episode):
        with Session(engine) as s:
            return s.exec(select(CallRow.t_request).where(CallRow.episode_id == episode)).all()

    try:
        body = {"model": "m", "messages": [{"role": "user", "content": "one"}]}
        httpx.post(f"{proxy.url}/ep/live-1/t/task_9/v1/chat/completions", json=body)
        assert len(_wait_for(lambda: calls("live-1"))) == 1  # proxy still running
        body["messages"].append({"role": "user", "content": "two"})
        httpx.post(f"{proxy.url}/ep/live-1/t/task_9/v1/chat/completions", json=body)
        assert len(_wait_for(lambda: len(calls("live-1")) == 2 and calls("live-1"))) == 2

        def sources():
            with Session(engine) as s:
                return [(x.n_calls, x.path) for x in s.exec(select(Source)).all()]

        # The calls commit before the file's bookkeeping row does: wait for that row too.
        _wait_for(lambda: [n for n, _ in sources()] == [2])
        with Session(engine) as s:
            assert s.get(Episode, "live-1").task_id == "task_9"
            (src,) = s.exec(select(Source)).all()  # one file, appended to, not loaded twice
            assert src.n_calls == 2
    finally:
        proxy.stop()
        lt.close()
    # The usual ingest of the same folder afterwards adds nothing.
    with Session(engine) as s:
        report = ingest_paths([out], session=s)
        assert [f.status for f in report.files] == ["already_loaded"]
        assert len(s.exec(select(CallRow)).all()) == 2


@pytest.mark.sqlite_only  # breaks the store by replacing its file
def test_a_bad_store_never_stops_the_recording(tmp_path):
    lt = LoopThread()
    scripted = Scripted()
    port = lt.start_scripted(scripted)
    url = f"sqlite:///{tmp_path / 'live.db'}"
    err = io.StringIO()
    proxy = lt.start_proxy(
        f"http://127.0.0.1:{port}", str(tmp_path / "log"), db_url=url, db_window=0.01, stderr=err
    )
    try:
        # Ingest runs in a `clawviz follow` child: break the store once it has opened it.
        assert _wait_for(lambda: "clawviz follow: following" in err.getvalue(), 60)
        get_engine(url).dispose()
        (tmp_path / "live.db").unlink()
        (tmp_path / "live.db").mkdir()  # the store file is gone: ingest fails
        for _ in range(2):
            r = httpx.post(
                f"{proxy.url}/ep/x/v1/chat/completions", json={"model": "m", "messages": []}
            )
            assert r.status_code == 200
    finally:
        writer = proxy.stop()
        lt.close()
    assert writer.written == 2
    assert "ERROR: could not ingest into" in err.getvalue(), err.getvalue()
    assert "the follower exited with status 1" in err.getvalue()  # and the exit says so
