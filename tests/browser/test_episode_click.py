"""Real browser: open an episode, click a node of the Plotly tree, see the inspector follow."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from conftest import click_at, wait_for_app_run

pytestmark = pytest.mark.browser

EPISODE = "t0001-openclaw-a2"

NODE_POSITION_JS = """
(index) => {
  const gd = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  const trace = gd._fullData.find((t) => t.name === 'calls');
  const i = index < 0 ? trace.customdata.length + index : index;
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.querySelector('.draglayer .nsewdrag').getBoundingClientRect();
  return {
    call: trace.customdata[i],
    index: i,
    label: trace.text[i],
    x: box.left + xa.l2p(trace.x[i]),
    y: box.top + ya.l2p(trace.y[i]),
  };
}
"""


def click_node(page, index: int, timeout: float | None = None) -> dict:
    """Click the tree node `index` (negative: from the end) with `click_at`; returns the node
    (NODE_POSITION_JS)."""
    return click_at(page, lambda: page.evaluate(NODE_POSITION_JS, index), timeout)


def _call_param(page) -> str | None:
    values = parse_qs(urlparse(page.url).query).get("call")
    return values[0] if values else None


def _selected_label(page) -> str:
    return page.get_by_role("combobox", name="Call", exact=True).input_value()


def test_click_on_a_tree_node_selects_that_call(app_server, page):
    page.goto(f"{app_server.url}/episode?episode={EPISODE}")
    page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point")
    wait_for_app_run(page)
    # A deep link opened first on a fresh server still gets the app frame (menu and sidebar),
    # not Streamlit's legacy pages/ listing.
    nav = page.get_by_test_id("stSidebarNav")
    assert nav.get_by_text("Workspace diff").count() == 1
    assert page.get_by_test_id("stSidebar").get_by_text("Settings hash").count() == 1
    before = _call_param(page)
    target = page.evaluate(NODE_POSITION_JS, -1)
    assert target["call"] != before
    assert not _selected_label(page).startswith(f"call {target['label']} · ")
    target = click_at(page, lambda: page.evaluate(NODE_POSITION_JS, -1), timeout=60_000)
    wait_for_app_run(page)
    assert _call_param(page) == target["call"]
    # The inspector follows: its call picker now shows the clicked call, by the number drawn on
    # the node.
    page.wait_for_function(
        "(n) => document.querySelector('input[aria-label=\"Call\"]').value.trim().startsWith(n)",
        arg=f"call {target['label']} · ",
    )
    assert _selected_label(page).strip().startswith(f"call {target['label']} · ")
