"""Re-ingesting an exchange log that grew (a live recording) adds only its new lines."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from clawviz.jobs.ingest import LineReader, ingest_paths
from clawviz.store.db import get_engine
from clawviz.store.models import CallRow, Episode, RejectedLine, Source
from tests.dburl import fresh_url


def rec(i: int, episode: str | None = "ep-a") -> dict:
    r = {
        "request": {
            "timestamp": 100.0 + i,
            "method": "POST",
            "url": "http://m/v1/chat/completions",
            "headers": {},
            "body": {"model": "m", "messages": [{"role": "user", "content": f"turn {i}"}]},
        },
        "response": {
            "timestamp": 100.5 + i,
            "status_code": 200,
            "body": {
                "choices": [{"message": {"role": "assistant", "content": f"reply {i}"}}],
                "model": "m",
            },
        },
    }
    if episode:
        r["clawviz"] = {"episode_id": episode, "seq": i}
    return r


def line(i: int, episode: str | None = "ep-a") -> bytes:
    return json.dumps(rec(i, episode)).encode() + b"\n"


@pytest.fixture
def session(tmp_path):
    with Session(get_engine(fresh_url(tmp_path, "s"))) as s:
        yield s


def n(session, model):
    return session.exec(select(func.count()).select_from(model)).one()


def texts(session, episode="ep-a"):
    rows = session.exec(
        select(CallRow.line, CallRow.t_request).where(CallRow.episode_id == episode)
    ).all()
    return sorted(rows)


def test_grown_log_adds_only_new_lines(tmp_path, session):
    log = tmp_path / "ep-a.jsonl"
    log.write_bytes(b"".join(line(i) for i in range(3)))
    first = ingest_paths([log], session=session)
    assert [f.status for f in first.files] == ["loaded"] and first.n_calls == 3
    with log.open("ab") as f:
        f.write(line(3) + line(4))
    again = ingest_paths([log], session=session)
    assert [(f.status, f.n_calls) for f in again.files] == [("appended", 2)]
    assert n(session, CallRow) == 5 and n(session, Source) == 1
    assert texts(session) == [(k + 1, 100.0 + k) for k in range(5)]
    src = session.exec(select(Source)).one()
    assert (src.size_bytes, src.n_lines, src.n_calls) == (log.stat().st_size, 5, 5)
    assert session.get(Episode, "ep-a").n_calls == 5
    ids = session.exec(select(CallRow.call_id)).all()
    assert len({i.split(":")[0] for i in ids}) == 1  # one file, one id prefix
    # Nothing new: already loaded; a third growth appends again.
    assert [f.status for f in ingest_paths([log], session=session).files] == ["already_loaded"]
    with log.open("ab") as f:
        f.write(line(5))
    assert ingest_paths([log], session=session).files[0].n_calls == 1
    assert n(session, CallRow) == 6


def test_torn_last_line_is_read_again_whole(tmp_path, session):
    log = tmp_path / "ep-a.jsonl"
    full = line(2)
    log.write_bytes(line(0) + line(1) + full[:40])  # the writer was mid-line
    first = ingest_paths([log], session=session)
    assert first.n_calls == 2
    reasons = [(r.line, r.reason.split(":")[0]) for r in first.rejected]
    assert reasons == [(3, "truncated last line")]
    with log.open("ab") as f:
        f.write(full[40:] + line(3))
    again = ingest_paths([log], session=session)
    assert [(f.status, f.n_calls, f.n_rejected) for f in again.files] == [("appended", 2, 0)]
    assert texts(session) == [(k + 1, 100.0 + k) for k in range(4)]
    assert n(session, RejectedLine) == 0
    assert session.exec(select(Source.n_rejected)).one() == 0


def test_changed_head_is_a_new_file(tmp_path, session):
    log = tmp_path / "ep-a.jsonl"
    log.write_bytes(line(0) + line(1))
    ingest_paths([log], session=session)
    log.write_bytes(line(7) + line(1) + line(2))  # rewritten, not appended
    report = ingest_paths([log], session=session)
    assert [f.status for f in report.files] == ["loaded"]
    assert n(session, Source) == 2 and n(session, CallRow) == 5


def test_identityless_calls_join_a_name_that_arrives_later(tmp_path, session):
    log = tmp_path / "run-1.jsonl"
    log.write_bytes(line(0, None) + line(1, None))
    ingest_paths([log], session=session)
    # No session in the traffic: named by the first line's request time, not the path.
    fallback = "session-1970-01-01T00:01:40.000Z"
    assert set(session.exec(select(CallRow.episode_id)).all()) == {fallback}
    with log.open("ab") as f:
        f.write(line(2, "ep-z"))
    ingest_paths([log], session=session)
    assert set(session.exec(select(CallRow.episode_id)).all()) == {"ep-z"}
    assert session.get(Episode, "ep-z").n_calls == 3


def test_reader_stops_at_the_hashed_size(tmp_path):
    log = tmp_path / "x.jsonl"
    log.write_bytes(line(0) + line(1) + line(2))
    end = len(line(0) + line(1))
    r = LineReader(log, end=end)
    assert [k for k, _ in r.lines("x")] == [1, 2]
    r.close()
    r = LineReader(log, start=len(line(0)), end=end, first_line=2)
    assert [(k, json.loads(d)["request"]["timestamp"]) for k, d in r.lines("x")] == [(2, 101.0)]
    r.close()
