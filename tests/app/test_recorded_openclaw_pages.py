"""The Episode and Runs pages on the real OpenClaw 2026.9.6 recording and on an unexplained tree.

The inspector lists what tree matching ignored in a request (the per-request context block);
an episode the self-check flags is counted on Runs and warned about on the Episode page.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page
from sqlmodel import Session

from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import get_engine
from clawviz.ui import diff_view
from tests.dburl import fresh_url, query

REC = Path(__file__).resolve().parents[1] / "data" / "recorded" / "openclaw-2026.9.6"
EPISODE = "openclaw-gateway-session"


@pytest.fixture(scope="module")
def recorded_url(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("rec")
    shutil.copy(REC / "gateway-session" / "exchanges.jsonl.gz", folder / "gw.jsonl.gz")
    # A second episode whose two main roots nothing explains (a hand-made wrong tree).
    body = {"model": "m", "messages": [{"role": "user", "content": "first task"}]}
    other = dict(body, messages=[{"role": "user", "content": "an unrelated second root"}])
    lines = []
    for i, b in enumerate((body, other)):
        lines.append(
            {
                "request": {
                    "timestamp": 100.0 + i,
                    "method": "POST",
                    "url": "http://h/v1/chat/completions",
                    "headers": {},
                    "body": b,
                },
                "response": {
                    "timestamp": 100.5 + i,
                    "status_code": 200,
                    "headers": {},
                    "body": {
                        "choices": [
                            {
                                "message": {"role": "assistant", "content": "ok"},
                                "finish_reason": "stop",
                            }
                        ]
                    },
                },
                "clawviz": {"episode_id": "two-roots", "seq": i},
            }
        )
    (folder / "two.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    url = fresh_url(folder)
    with Session(get_engine(url)) as s:
        ingest_paths([folder], session=s)
        s.commit()
        ensure_analysis(s)
    return url


def test_inspector_shows_what_matching_ignored(recorded_url, on_store):
    on_store(recorded_url)
    ((cid,),) = query(
        recorded_url,
        'SELECT call_id FROM "call" WHERE episode_id = :e AND line = 2',
        e=EPISODE,
    )
    at = open_page("pages/episode.py", episode=EPISODE, call=cid)
    no_exception(at)
    assert any("Ignored for matching" in e.label for e in at.expander)
    # Folded, its table is not drawn; opening it (a click reruns the page) draws it.
    assert not any("rule" in d.value.columns for d in at.dataframe)
    at.session_state[f"{diff_view.KEY_FOLD}ignored_{cid}"] = True
    at.run()
    no_exception(at)
    table = next(d.value for d in at.dataframe if "rule" in d.value.columns)
    assert "openclaw_request_context" in set(table["rule"])
    assert any("BEGIN_OPENCLAW_INTERNAL_CONTEXT" in t for t in table["text"])
    # The real recording explains itself: no self-check warning.
    assert not any("cannot explain this tree" in w.value for w in at.warning)


def test_unexplained_tree_is_counted_and_flagged(recorded_url, on_store):
    on_store(recorded_url)
    at = open_page()
    no_exception(at)
    assert {m.label: m.value for m in at.metric}["Unexplained trees"] == "1"
    at = open_page("pages/episode.py", episode="two-roots")
    no_exception(at)
    (w,) = [w for w in at.warning if "cannot explain this tree" in w.value]
    assert "has no parent" in w.value
    assert {m.label: m.value for m in at.metric}["Status"] == "dropped"
