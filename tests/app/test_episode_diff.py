"""AppTest of the Request tab on the real OpenClaw 2026.9.6 recording: the diff against the parent.

Line 14 of `gateway-session` is the heartbeat wake whose parent is line 13 ("settle", per the
recording's expected.json); OpenClaw's system prompt lost its "## Bootstrap Pending" block in
between (read by hand from the two requests).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page
from sqlmodel import Session

from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import get_engine
from tests.dburl import fresh_url, query

REC = Path(__file__).resolve().parents[1] / "data" / "recorded" / "openclaw-2026.9.6"
EPISODE = "openclaw-gateway-session"


@pytest.fixture(scope="module")
def recorded_url(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("rec_diff")
    shutil.copy(REC / "gateway-session" / "exchanges.jsonl.gz", folder / "gw.jsonl.gz")
    url = fresh_url(folder)
    with Session(get_engine(url)) as s:
        ingest_paths([folder], session=s)
        s.commit()
        ensure_analysis(s)
    return url


def _call_at(url: str, line: int) -> str:
    ((cid,),) = query(
        url, 'SELECT call_id FROM "call" WHERE episode_id = :e AND line = :l', e=EPISODE, l=line
    )
    return cid


def _html(at) -> list[str]:
    return [e.proto.body for e in at.get("html")]


def test_request_tab_diffs_the_call_against_its_parent(recorded_url, on_store):
    on_store(recorded_url)
    at = open_page("pages/episode.py", episode=EPISODE, call=_call_at(recorded_url, 14))
    no_exception(at)
    labels = [e.label for e in at.expander]
    system = next(label for label in labels if label.startswith("System prompt: "))
    assert system.startswith("System prompt: +") and "lines" in system
    assert any(label.startswith("Tools: unchanged") for label in labels)
    # The heartbeat changes nothing matching counts: every changed message line is ignored.
    messages = next(label for label in labels if label.startswith("Messages: "))
    assert messages.endswith("ignored for matching") and "+" not in messages
    bodies = _html(at)
    system_html = next(b for b in bodies if "Bootstrap Pending" in b)
    assert "## Bootstrap Pending" in system_html and "unchanged lines" in system_html
    assert any("ignored for matching: openclaw_request_context" in b for b in bodies)
    assert any("Changes since the parent" in m.value for m in at.markdown)


def test_root_call_has_no_diff(recorded_url, on_store):
    on_store(recorded_url)
    at = open_page("pages/episode.py", episode=EPISODE, call=_call_at(recorded_url, 1))
    no_exception(at)
    assert not any(e.label.startswith("System prompt: ") for e in at.expander)
    assert any(e.label.startswith("System prompt (") for e in at.expander)
    assert any("every message is new" in c.value for c in at.caption)
