"""Real browser: a shared file of 10,000 calls with a 5 MB message opens: the tree is windowed
(a few hundred nodes in the DOM, not 10,000), keys still walk the calls, a call outside the
window is drawn when it is selected, and the long message shows its start with "show all"."""

from __future__ import annotations

import re

import pytest

from clawviz.figures.explorer import build_payload
from clawviz.figures.explorer.assets import share_html
from tests.test_explorer_big import HEAD, big_calls

pytestmark = pytest.mark.browser

INSPECTOR = '[data-testid="call-inspector"]'


def test_ten_thousand_calls_and_a_5_mb_message_open_windowed(page, tmp_path):
    calls, analysis, huge_id = big_calls()
    payload = build_payload("big", calls, analysis)
    out = tmp_path / "big.html"
    out.write_text(share_html(payload), encoding="utf-8")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri() + f"?call={huge_id}")
    page.wait_for_selector(f'{INSPECTOR}[data-call-id="{huge_id}"]', timeout=60_000)
    drawn = page.locator("g.cvx-node").count()
    assert 0 < drawn < 3000, f"{drawn} nodes in the DOM: the tree is not windowed"

    # The 5 MB message: its start is shown, the rest behind "show all".
    page.locator(f"{INSPECTOR} summary", has_text="Request messages").click()
    # The long message's own pane ("── #32 user ── (1,000,114 chars)") is folded: open it.
    page.locator(
        f"{INSPECTOR} summary", has_text=re.compile(r"^── #\d+ user ── \([\d,]+ chars\)$")
    ).last.click()
    show_all = page.locator('[data-testid="explorer-show-all"]').first
    show_all.scroll_into_view_if_needed()
    assert show_all.is_visible() and "not shown" in show_all.inner_text()
    long_pre = page.locator(f"{INSPECTOR} .cvx-long pre").first
    before = long_pre.evaluate("e => e.textContent.length")
    assert HEAD in long_pre.evaluate("e => e.textContent.slice(0, 200)")
    show_all.click()
    after = long_pre.evaluate("e => e.textContent.length")
    assert before <= 20_000 < after

    # The last call of the episode is far outside the first window: selecting it draws it.
    last = payload["calls"][-1]["id"]
    assert page.locator(f'g.cvx-node[data-call-id="{last}"]').count() == 0
    page.goto(out.as_uri() + f"?call={last}")
    page.wait_for_selector(f'{INSPECTOR}[data-call-id="{last}"]', timeout=60_000)
    node = page.locator(f'g.cvx-node[data-call-id="{last}"]')
    assert node.count() == 1 and "cvx-sel" in (node.get_attribute("class") or "")
    page.keyboard.press("k")
    shown = page.get_attribute(INSPECTOR, "data-call-id")
    assert shown != last
    assert page.locator(f'g.cvx-node[data-call-id="{shown}"].cvx-sel').count() == 1
    assert not errors, errors
