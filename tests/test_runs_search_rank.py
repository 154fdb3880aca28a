"""The Runs search box's query on SQLite ranks in the full-text index and reads only the best
`limit` documents (issue 26 §3, bench/README.md third pass): its hits are the documents with the
lowest bm25 scores of every match, best first, as ranking every match joined to its call gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import Session

from clawviz.jobs.ingest import ingest_paths
from clawviz.store import search
from clawviz.store.db import get_engine
from tests.dburl import fresh_url, on_postgres

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(on_postgres(), reason="bm25 and FTS5 are SQLite's")
WORDS = ["report", "stats", "announcement", "workspace", "json"]
"""Words of the sample tasks, each in many documents."""


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    url = fresh_url(tmp_path_factory.mktemp("rank"), "rank")
    with Session(get_engine(url)) as s:
        ingest_paths([REPO / "sample_logs"], session=s)
        s.commit()
        yield s


@pytest.mark.parametrize("word", WORDS)
def test_the_best_documents_of_every_match_best_first(session, word):
    scores = [
        (float(score), int(rowid))
        for rowid, score in session.connection().execute(
            text(
                "SELECT search_fts.rowid, bm25(search_fts) FROM search_fts JOIN search_doc d "
                'ON d.id = search_fts.rowid JOIN "call" c ON c.call_id = d.call_id '
                "WHERE search_fts MATCH :q"
            ),
            {"q": f'"{word}"'},
        )
    ]
    assert len(scores) > 8, word  # more matches than the limit below
    hits = search.search(session, word, limit=5)
    got = []
    for h in hits:
        (row,) = session.connection().execute(
            text(
                "SELECT bm25(search_fts) FROM search_fts JOIN search_doc d ON d.id = "
                "search_fts.rowid WHERE search_fts MATCH :q AND d.call_id = :c AND d.kind = :k "
                "AND d.episode_id IS :e"
            ),
            {"q": f'"{word}"', "c": h.call_id, "k": "call" if h.kind == "reply" else "message",
             "e": h.episode_id},
        ).all()  # fmt: skip
        got.append(float(row[0]))
    assert got == sorted(got), word  # best first
    assert got == [s for s, _ in sorted(scores)][:5], word  # the 5 best of every match
