"""The payload's `edits` per call (History vs parent): empty by default, filled through the one
hook `clawviz.figures.explorer.history_edits`, and listed by the inspector."""

from __future__ import annotations

from sqlmodel import Session

import clawviz.figures.explorer as explorer
from clawviz.jobs.share import load_payload
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine

EPISODE = "t0001-claude-code-a1"


def test_edits_are_empty_by_default(sample_db_url):
    with Session(get_engine(sample_db_url)) as s:
        p = load_payload(s, EPISODE, DEFAULT_SETTINGS)
    assert all(c["edits"] == [] for c in p["calls"])


def test_the_hook_fills_edits_with_exactly_four_keys(sample_db_url, monkeypatch):
    monkeypatch.setattr(explorer, "history_edits", lambda c, p, d: [
        {"rule": "r", "code": 7, "explained": 1, "summary": "s", "extra": "dropped"},
    ])  # fmt: skip
    with Session(get_engine(sample_db_url)) as s:
        p = load_payload(s, EPISODE, DEFAULT_SETTINGS)
    assert p["calls"][0]["edits"] == [{"rule": "r", "code": "7", "explained": True, "summary": "s"}]
