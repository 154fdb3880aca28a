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


def test_filters_and_an_incremental_index(session, tmp_path):
    assert search.refresh_index(session) > 0  # the first build
    assert search.refresh_index(session) == 0  # nothing new: nothing to add
    other = LOGS / "t0001-openclaw-a2.jsonl"
    ingest_paths([other], session=session)
    session.commit()
    added = search.refresh_index(session)
    # the incremental index holds what one built from scratch on both files holds
    with Session(get_engine(fresh_url(tmp_path, "both"))) as both:
        ingest_paths([LOG, other], session=both)
        both.commit()
        assert 0 < added and search.refresh_index(both) == search.refresh_index(session) + (
            search._max_id(session)
        )
    episodes = {h.episode_id for h in search.search(session, "dumpster")}
    assert episodes == {"t0001-openclaw-a1", "t0001-openclaw-a2"}
    only = search.search(session, "dumpster", episode_id="t0001-openclaw-a2")
    assert only and {h.episode_id for h in only} == {"t0001-openclaw-a2"}
    assert search.episodes_matching(session, "dumpster") == episodes


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
