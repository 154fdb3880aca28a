"""The payload's `edits` per call (History vs parent): from the edit rules, filled through the one
hook `clawviz.figures.explorer.history_edits` (recon.calldiff.call_edits), and listed by the
inspector."""

from __future__ import annotations

from sqlmodel import Session

import clawviz.figures.explorer as explorer
from clawviz.jobs.share import load_payload
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine

EPISODE = "t0001-claude-code-a1"


def test_each_call_lists_its_edits_against_its_parent(sample_db_url):
    # The sample generator (clawviz/samples/claude_code.py) sends Claude Code's billing-header
    # system line with a `cch=` that changes on every request, and nothing else differs from
    # the parent's request plus reply: every child lists that one edit, explained by its rule;
    # a root (no parent) lists none.
    with Session(get_engine(sample_db_url)) as s:
        p = load_payload(s, EPISODE, DEFAULT_SETTINGS)
    children = [c for c in p["calls"] if c["parent"]]
    assert children and all(c["edits"] for c in children)
    for c in children:
        assert [(e["code"], e["explained"]) for e in c["edits"]] == [
            ("claude_code_billing_header", True)
        ]
    assert all(c["edits"] == [] for c in p["calls"] if not c["parent"])


def test_the_hook_fills_edits_with_exactly_four_keys(sample_db_url, monkeypatch):
    monkeypatch.setattr(explorer, "history_edits", lambda c, p, d, pd=None: [
        {"rule": "r", "code": 7, "explained": 1, "summary": "s", "extra": "dropped"},
    ])  # fmt: skip
    with Session(get_engine(sample_db_url)) as s:
        p = load_payload(s, EPISODE, DEFAULT_SETTINGS)
    assert p["calls"][0]["edits"] == [{"rule": "r", "code": "7", "explained": True, "summary": "s"}]
