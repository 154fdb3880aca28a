"""Real browser: the inspector's "History vs parent" list of a call's edits (the payload's
`edits`, filled here through the hook `clawviz.figures.explorer.history_edits`)."""

from __future__ import annotations

import pytest
from sqlmodel import Session

import clawviz.figures.explorer as explorer
from clawviz.figures.explorer.assets import share_html
from clawviz.jobs.share import load_payload
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine
from tests.conftest import SCRIPT_TEXT

pytestmark = pytest.mark.browser

EPISODE = "t0001-claude-code-a1"
EDITS = [
    {"rule": "openclaw_context_block", "code": "drop", "explained": True,
     "summary": "context block sent once"},
    {"rule": "", "code": "dropped_tool_call", "explained": False, "summary": SCRIPT_TEXT},
]  # fmt: skip


def _hook(call, parent, decision, parent_decision=None):
    return EDITS if parent is not None else []


def test_inspector_lists_edits_explained_labelled_unexplained_highlighted(
    sample_db_url, page, tmp_path, monkeypatch
):
    monkeypatch.setattr(explorer, "history_edits", _hook)
    with Session(get_engine(sample_db_url)) as s:
        p = load_payload(s, EPISODE, DEFAULT_SETTINGS)
    out = tmp_path / "share.html"
    out.write_text(share_html(p), encoding="utf-8")
    child = next(c for c in p["calls"] if c["parent"])
    root = next(c for c in p["calls"] if not c["parent"])
    page.goto(out.as_uri() + f"?call={root['id']}")
    page.wait_for_selector(f'[data-testid="call-inspector"][data-call-id="{root["id"]}"]')
    assert page.locator('[data-testid="explorer-edits"]').count() == 0, "none: no list"
    page.locator(f'g.cvx-node[data-call-id="{child["id"]}"]').click()
    box = page.locator('[data-testid="explorer-edits"]')
    assert "History vs parent (2)" in box.inner_text()
    ok, bad = box.locator("li.cvx-edit-ok"), box.locator("li.cvx-edit-bad")
    assert ok.count() == 1 and bad.count() == 1
    assert ok.inner_text() == "openclaw_context_block: context block sent once"
    assert bad.inner_text() == f"unexplained dropped_tool_call: {SCRIPT_TEXT}"
    assert bad.locator("script").count() == 0
    colour = bad.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour not in ("rgba(0, 0, 0, 0)", "transparent"), "unexplained ones are highlighted"
