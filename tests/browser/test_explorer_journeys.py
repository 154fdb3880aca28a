"""The debug journey through the Episode explorer in real Chromium, at 1280x720, clicking as a
person does: Runs -> filter status dropped -> one click on the dropped episode's row -> the
explorer (tree and inspector side by side) -> the reason's ⚑ button in its header -> the
inspector shows the call that caused it, its reason and what it retried.

What should be seen comes from sample_logs/expected.json (which episode is dropped, which call
failed last, its HTTP status and what it retried), never from clawviz's output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import wait_for_app_run
from test_debug_dropped_journey import DROPPED, _expected_calls, _filter_dropped, _open_row

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("CLAWVIZ_SHOTS", "/tmp/shots"))
INSPECTOR = '[data-testid="call-inspector"]'


def test_debug_a_dropped_episode_in_the_explorer(app_server, chromium_browser):
    ended = "t0001-claude-code-a4"
    calls = _expected_calls(ended)
    last_main = max((c for c in calls if c["role"] == "main"), key=lambda c: c["seq"])
    assert last_main["state"] == "failed" and last_main["http_status"] == 500
    n = last_main["line"]
    retried = next(c for c in calls if c["line"] == last_main["retry_of"]["line"])

    context = chromium_browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(150_000)
    try:
        page.goto(app_server.url + "/")
        page.get_by_role("heading", name="Runs").wait_for()
        wait_for_app_run(page)
        _filter_dropped(page)
        _open_row(page, [e["episode_id"] for e in DROPPED].index(ended), ended)
        page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
        wait_for_app_run(page)
        explorer = page.get_by_test_id("episode-explorer")
        assert explorer.locator(".cvx-badge").first.inner_text() == "dropped"
        # The reason is a button in the explorer's header; it goes to the call it names.
        reason = explorer.locator("button.cvx-reason", has_text="ended_in_error")
        assert reason.count() == 1
        reason.click()
        inspector = page.locator(INSPECTOR)
        inspector.locator(".cvx-insp-head", has_text=f"Call {n}").wait_for(timeout=5_000)
        shown = inspector.get_attribute("data-call-id")
        node = page.locator(f'g.cvx-node[data-call-id="{shown}"]')
        assert "cvx-st-failed" in (node.get_attribute("class") or ""), "a failed node"
        assert "cvx-sel" in (node.get_attribute("class") or ""), "selected in the tree"
        assert node.locator("text.cvx-pin").count() == 1, "with the ⚑ pin"
        pin = inspector.locator(".cvx-pinbox").inner_text()
        assert "ended_in_error" in pin and f"last main call {n} failed (HTTP 500)" in pin
        facts = inspector.locator("table.cvx-kv").evaluate(
            "t => Object.fromEntries([...t.rows].map(r => [r.cells[0].textContent, "
            "r.cells[1].textContent]))"
        )
        assert facts["retry of"] == f"call {retried['line']}"
        assert facts["HTTP"] == "500"
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "explorer_dropped.png"))
    finally:
        context.close()
