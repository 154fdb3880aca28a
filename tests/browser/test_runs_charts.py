"""The Runs charts section in Chromium: closed on first load (nothing drawn), opened by a click
on its header, which writes `charts=1` to the address bar (one history entry); a filter change
keeps it open and redraws the charts for the episodes shown; Back closes it again."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import pick_runs_filter, wait_for_app_run

from clawviz.ui.runs import CHARTS_LABEL

SHOT = Path(os.environ.get("CLAWVIZ_RUNS_CHARTS_SHOT", "/tmp/runscharts/runs-charts.png"))
REASON_BARS_JS = """() => {
  const gd = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
    .find((g) => g.layout && g.layout.title && /Reasons \(episodes/.test(g.layout.title.text));
  return gd ? gd.data[0].y.join(',') : null;
}"""


def _params(page) -> dict:
    return page.evaluate(
        "() => Object.fromEntries([...new URL(location.href).searchParams.keys()]"
        ".map((k) => [k, new URL(location.href).searchParams.getAll(k)]))"
    )


def test_the_charts_open_on_demand_and_follow_the_filters(app_server, chromium_browser):
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(app_server.url + "/")
        page.get_by_test_id("stDataFrame").first.wait_for()
        wait_for_app_run(page)
        header = page.get_by_text(CHARTS_LABEL, exact=True)
        header.wait_for()
        assert page.get_by_test_id("stPlotlyChart").count() == 0
        assert "charts" not in _params(page)
        entries = page.evaluate("history.length")

        header.click()
        page.wait_for_function("() => new URL(location.href).searchParams.get('charts') === '1'")
        page.wait_for_function(f"() => ({REASON_BARS_JS})() !== null")
        wait_for_app_run(page)
        assert page.evaluate("history.length") == entries + 1
        assert page.get_by_test_id("stPlotlyChart").count() == 3
        every = page.evaluate(REASON_BARS_JS).split(",")
        assert "too_many_branches" in every and len(every) > 1
        header.scroll_into_view_if_needed()
        SHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOT), full_page=True)

        # A filter keeps the section open; its reasons chart now counts the one episode shown.
        pick_runs_filter(page, "Reason", "too_many_branches")
        page.wait_for_function("() => new URL(location.href).searchParams.get('reason')")
        page.wait_for_function(f"() => ({REASON_BARS_JS})() === 'too_many_branches'")
        wait_for_app_run(page)
        assert _params(page) == {"charts": ["1"], "reason": ["too_many_branches"]}

        # Back twice: the filter goes, then the section closes.
        page.go_back()
        page.wait_for_function("() => !new URL(location.href).searchParams.has('reason')")
        wait_for_app_run(page)
        page.go_back()
        page.wait_for_function("() => !new URL(location.href).searchParams.has('charts')")
        wait_for_app_run(page)
        page.wait_for_function("() => !document.querySelector('[data-testid=\"stPlotlyChart\"]')")
    finally:
        context.close()
