"""Real browser: the explorer's timeline (calls as bars on wall-clock time, overlapping calls in
separate lanes) and the cost per call, in a `clawviz share` file opened from disk."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from clawviz.figures.explorer.assets import share_html
from clawviz.jobs.share import load_payload
from clawviz.settings import DEFAULT_SETTINGS, parse_value
from clawviz.store.calls import load_calls
from clawviz.store.db import get_engine

pytestmark = pytest.mark.browser

EPISODE = "t0001-claude-code-a1"
INSPECTOR = '[data-testid="call-inspector"]'
PRICES = "claude-*=3/15/0.3/3.75"


def test_timeline_bars_overlap_for_parallel_calls_and_a_bar_click_inspects(
    sample_db_url, page, tmp_path
):
    settings = DEFAULT_SETTINGS.with_(prices=parse_value("prices", PRICES))
    with Session(get_engine(sample_db_url)) as s:
        payload = load_payload(s, EPISODE, settings)
        calls = load_calls(s, EPISODE)
    out = tmp_path / "share.html"
    out.write_text(share_html(payload), encoding="utf-8")
    timed = [c for c in calls if c.t_request is not None and c.t_response is not None]
    # Two calls in flight at once, from the logged request and response times.
    a, b = next(
        (x, y)
        for x in timed
        for y in timed
        if x.call_id < y.call_id and x.t_request < y.t_response and y.t_request < x.t_response
    )
    page.goto(out.as_uri())
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    assert page.locator('[data-testid="explorer-timeline"]').is_hidden()
    page.locator('[data-testid="explorer-view-timeline"]').click()
    bars = page.locator("g.cvx-bar")
    assert bars.count() == len(timed)
    box_a = page.locator(f'g.cvx-bar[data-call-id="{a.call_id}"]').bounding_box()
    box_b = page.locator(f'g.cvx-bar[data-call-id="{b.call_id}"]').bounding_box()
    assert box_a["y"] != box_b["y"], "calls in flight at once share a lane"
    assert box_a["x"] < box_b["x"] + box_b["width"] and box_b["x"] < box_a["x"] + box_a["width"]
    # Start order on the clock is left to right.
    first, last = min(timed, key=lambda c: c.t_request), max(timed, key=lambda c: c.t_request)
    x_first = page.locator(f'g.cvx-bar[data-call-id="{first.call_id}"]').bounding_box()["x"]
    x_last = page.locator(f'g.cvx-bar[data-call-id="{last.call_id}"]').bounding_box()["x"]
    assert x_first < x_last

    page.locator(f'g.cvx-bar[data-call-id="{b.call_id}"] rect').first.click()
    assert page.get_attribute(INSPECTOR, "data-call-id") == b.call_id
    shown = page.locator(f'{INSPECTOR} [data-testid="explorer-call-cost"]').inner_text()
    u = b.usage
    dollars = (
        u.input_tokens * 3
        + u.output_tokens * 15
        + (u.cache_read_input_tokens or 0) * 0.3
        + (u.cache_creation_input_tokens or 0) * 3.75
    ) / 1e6
    digits = 2 if dollars >= 1 else 3 if dollars >= 0.01 else 5
    assert shown.split("\t")[-1].startswith(f"${dollars:.{digits}f} ("), shown
    # No recorder timings in the sample logs: queued and first byte are "—", never made up.
    timing = page.locator(f"{INSPECTOR} tr", has_text="timing").inner_text()
    assert "queued \u2014" in timing and "first byte \u2014" in timing
    assert f"last byte {b.t_response - b.t_request:.3f} s" in timing

    # t goes back to the tree.
    page.keyboard.press("t")
    assert page.locator('[data-testid="explorer-timeline"]').is_hidden()
    assert page.locator("g.cvx-node").first.is_visible()
