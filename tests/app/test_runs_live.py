"""Runs page while a recording runs: the live indicator and calls that arrive meanwhile."""

from __future__ import annotations

import json
import time

from apphelpers import no_exception, open_page
from sqlmodel import Session

from clawviz.jobs.ingest import ingest_paths
from clawviz.store import queries
from clawviz.store.db import get_engine
from tests.dburl import fresh_url


def _line(episode: str, ts: float, text: str) -> str:
    return (
        json.dumps(
            {
                "request": {
                    "timestamp": ts,
                    "method": "POST",
                    "url": "http://m/v1/chat/completions",
                    "headers": {},
                    "body": {"model": "m", "messages": [{"role": "user", "content": text}]},
                },
                "response": {
                    "timestamp": ts + 0.5,
                    "status_code": 200,
                    "body": {"choices": [{"message": {"role": "assistant", "content": "ok"}}]},
                },
                "clawviz": {"episode_id": episode},
            }
        )
        + "\n"
    )


def _ingest(url, path):
    with Session(get_engine(url)) as s:
        ingest_paths([path], session=s)


def test_live_state_names_recent_episodes(tmp_path):
    url = fresh_url(tmp_path, "s")
    now = time.time()
    log = tmp_path / "a.jsonl"
    log.write_text(_line("old-1", now - 3600, "a") + _line("rec-1", now - 5, "b"))
    _ingest(url, log)
    with Session(get_engine(url)) as s:
        st = queries.live_state(s, now)
    assert st.live == ("rec-1",)
    assert st.stamp[:2] == (2, 2)


def test_runs_page_shows_live_episodes_and_new_calls(tmp_path, on_store):
    url = fresh_url(tmp_path, "s")
    now = time.time()
    log = tmp_path / "rec-1.jsonl"
    log.write_text(_line("old-1", now - 3600, "a") + _line("rec-1", now - 5, "b"))
    _ingest(url, log)
    on_store(url)
    at = open_page()
    no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    assert "live: 1 episode(s)" in captions and "rec-1" in captions and "old-1" not in captions
    table = next(d for d in at.dataframe if "episode_id" in d.value.columns).value
    assert set(table["episode_id"]) == {"old-1", "rec-1"}

    # The recorder ingests a new episode while the page is open; the next run shows it.
    with log.open("a") as f:
        f.write(_line("rec-2", time.time(), "c"))
    _ingest(url, log)
    at.run()
    no_exception(at)
    table = next(d for d in at.dataframe if "episode_id" in d.value.columns).value
    assert set(table["episode_id"]) == {"old-1", "rec-1", "rec-2"}
    assert "live: 2 episode(s)" in " ".join(c.value for c in at.caption)
