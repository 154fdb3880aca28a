"""Full-text search: a hit is the call that first sent a message or generated a reply; query
text is literal unless syntax is asked for; the index grows with new calls only. Expected lines
come from scanning the raw log in file order, not from the index."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session

from clawviz.jobs.ingest import ingest_paths
from clawviz.store import search
from clawviz.store.db import get_engine
from tests.dburl import fresh_url, on_postgres

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO / "sample_logs" / "exchanges" / "openclaw"
LOG = LOGS / "t0001-openclaw-a1.jsonl"


def _lines(path: Path, word: str, part: str) -> list[int]:
    """The lines of a log whose request body (or response) holds `word`, in any case."""
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        body = record.get("request", {}).get("body") if part == "request" else record["response"]
        if word.lower() in json.dumps(body, ensure_ascii=False).lower():
            out.append(i)
    assert out, f"{word!r} is not in {path}"
    return out


def _first_line(path: Path, word: str, part: str) -> int:
    return _lines(path, word, part)[0]


@pytest.fixture
def session(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(LOG, folder / LOG.name)
    with Session(get_engine(fresh_url(tmp_path, "search"))) as s:
        ingest_paths([folder], session=s)
        s.commit()
        yield s


def test_a_message_hit_names_the_call_that_first_sent_it(session):
    hits = search.search(session, "dumpster", role="user")
    assert hits, "the task text mentions the dumpster permit"
    first = hits[0]
    assert first.kind == "message" and first.role == "user"
    assert first.line == _first_line(LOG, "dumpster", "request")
    assert first.source_file.endswith(LOG.name)
    assert first.snippet_match.lower() == "dumpster"
    # every distinct message is one document: the re-sent history is not a second hit
    assert len({h.line for h in hits if h.kind == "message"}) == len(
        [h for h in hits if h.kind == "message"]
    )


def test_a_reply_hit_is_the_call_that_generated_it(session):
    hits = search.search(session, "Volunteer", role="assistant")
    replies = [h for h in hits if h.kind == "reply"]
    assert sorted(h.line for h in replies) == _lines(LOG, "Volunteer", "response")
    # the reply re-sent as history in the next request is the reply's document, not a new one
    assert all(h.kind == "reply" for h in hits)


def test_query_syntax_is_literal_unless_asked_for(session):
    assert search.search(session, 'dumpster OR "permit*') == search.search(
        session, "dumpster OR permit"
    )  # quotes and * are ordinary characters; OR is a word that must appear
    assert search.search(session, "NEAR( ) * -") == []  # nothing searchable, no error
    assert search.search(session, "dumpster OR nonexistentword", syntax=True)
    if not on_postgres():  # websearch_to_tsquery reads any text; FTS5 syntax can be malformed
        with pytest.raises(ValueError, match="not understood"):
            search.search(session, 'NEAR("dumpster"', syntax=True)


def _docs(session) -> list[tuple]:
    from sqlalchemy import text

    rows = session.execute(text("SELECT kind, key, call_id, role, text FROM search_doc"))
    return sorted(tuple(r) for r in rows)


def _pending(session) -> int:
    from sqlalchemy import text

    return session.execute(text("SELECT COUNT(*) FROM search_pending")).scalar_one()


def test_filters_and_an_incremental_index(session, tmp_path):
    # Ingest keeps the index: nothing is left for a search to index (issue 26).
    n_first = search._max_id(session)
    assert n_first > 0 and _pending(session) == 0
    assert search.refresh_index(session) == 0  # nothing new: nothing to add
    other = LOGS / "t0001-openclaw-a2.jsonl"
    ingest_paths([other], session=session)
    session.commit()
    assert _pending(session) == 0 and search._max_id(session) > n_first
    # the incremental index holds what one built from scratch on both files holds
    with Session(get_engine(fresh_url(tmp_path, "both"))) as both:
        ingest_paths([LOG, other], session=both)
        both.commit()
        assert _docs(both) == _docs(session)
    episodes = {h.episode_id for h in search.search(session, "dumpster")}
    assert episodes == {"t0001-openclaw-a1", "t0001-openclaw-a2"}
    only = search.search(session, "dumpster", episode_id="t0001-openclaw-a2")
    assert only and {h.episode_id for h in only} == {"t0001-openclaw-a2"}
    assert search.episodes_matching(session, "dumpster") == episodes


def test_calls_written_outside_ingest_are_queued_and_indexed_in_batches(session, monkeypatch):
    """A call written by any writer (here raw SQL, as a bench copy or another tool would) is
    queued by the trigger; the next search indexes it, in batches, without an anti-join."""
    from sqlalchemy import event, text

    from clawviz.store.models import CallRow

    before = search._max_id(session)
    cols = [c.name for c in CallRow.__table__.columns]
    picked = ", ".join("call_id || '-copy'" if c == "call_id" else f'"{c}"' for c in cols)
    names = ", ".join(f'"{c}"' for c in cols)
    session.execute(text(f'INSERT INTO "call" ({names}) SELECT {picked} FROM "call"'))
    session.commit()
    n_calls = session.execute(text('SELECT COUNT(*) FROM "call"')).scalar_one()
    assert _pending(session) == n_calls // 2
    batches: list[int] = []
    real = search._index_batch
    monkeypatch.setattr(search, "BATCH", 3)
    monkeypatch.setattr(search, "_index_batch", lambda s, b: batches.append(len(b)) or real(s, b))
    seen: list[str] = []
    engine = session.get_bind()
    listen = lambda *a, **_k: seen.append(a[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listen)
    try:
        hits = search.search(session, "dumpster")
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    assert _pending(session) == 0 and sum(batches) == n_calls // 2
    assert not any("NOT EXISTS (SELECT" in s for s in seen)  # no anti-join of every call
    # The copies' replies are new documents (their own call ids); messages were known already.
    assert search._max_id(session) - before == n_calls // 2
    assert hits


def test_cli_search_json(tmp_path):
    url = fresh_url(tmp_path, "cli")
    run = [sys.executable, "-m", "clawviz", "--db", url]
    subprocess.run([*run, "ingest", str(LOG)], check=True, capture_output=True, cwd=REPO)
    proc = subprocess.run(
        [*run, "--json", "search", "dumpster", "--role", "user"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert hits[0]["line"] == _first_line(LOG, "dumpster", "request")
    assert {"episode_id", "call_id", "source_file", "snippet_match"} <= set(hits[0])
