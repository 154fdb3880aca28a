"""The Runs page's first screen at 1280x720 (issue 25 §3): the controls are compact enough that
the table's first rows are in view on first load, and the filters are one click away."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import pick_runs_filter, wait_for_app_run

SHOT = Path(os.environ.get("CLAWVIZ_RUNS_SHOT", "/tmp/runsfit/runs-1280x720.png"))
ROW_PX = 35
"""A Streamlit table's header and rows are 35 px high (the grid is a canvas: no DOM rows)."""


def test_first_rows_are_in_view_at_1280x720(app_server, chromium_browser):
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        page.goto(app_server.url + "/")
        grid = page.get_by_test_id("stDataFrame").first
        grid.wait_for()
        wait_for_app_run(page)
        box = grid.bounding_box()
        assert box is not None
        # Header plus two rows: the first rows are fully inside the window, no scroll.
        assert box["y"] + 3 * ROW_PX <= 720, box
        assert page.evaluate("document.querySelector(\"[data-testid='stMain']\").scrollTop") == 0
        SHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOT))
        # The filters are behind one button, and still filter.
        pick_runs_filter(page, "Status", "dropped")
        page.wait_for_function("() => new URL(location.href).searchParams.get('status')")
        wait_for_app_run(page)
        assert page.get_by_text("1 on").count() == 1
    finally:
        context.close()
