"""Real browser: the call diff draws hostile log text as text (no element, no dialog), and
Compare's button opens the other episode in the same tab (one history entry)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from conftest import click_at, start_app, stop_app, wait_for_app_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def hostile_server(hostile_db_url, tmp_path_factory):
    server = start_app(hostile_db_url, tmp_path_factory.mktemp("st_hostile") / "server.log")
    try:
        yield server
    finally:
        stop_app(server.process)


def test_call_diff_shows_hostile_text_as_text(hostile_server, page, script_text):
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{hostile_server.url}/episode?episode=xss-ep&call=xss:2")
    wait_for_app_run(page)
    page.get_by_text("Changes since the parent").first.wait_for()
    # Unchanged sections are folded and drawn once opened (a click reruns the page).
    for label in ("System prompt: ", "Tools: "):
        page.get_by_text(label).first.click()
        wait_for_app_run(page)
    boxes = page.locator("[data-testid='stHtml']")
    # The boxes may still be arriving when the tab's caption shows (a cold server's first run).
    boxes.nth(2).wait_for(state="attached")
    assert boxes.count() >= 3
    # The tool result the child added is drawn as an added line, literally.
    text = " ".join(boxes.all_inner_texts())
    assert script_text in text
    assert page.locator("[data-testid='stHtml'] script, [data-testid='stHtml'] img").count() == 0
    assert page.locator("[data-testid='stHtml'] a").count() == 0
    assert dialogs == []


def test_compare_button_opens_the_other_episode_in_the_same_tab(hostile_server, page):
    # One server for the module: the hostile store's two episodes are enough to compare.
    # A button, not a page link: a page link to the page already shown never reached the
    # address bar in Streamlit 1.67, so the next rerun read the old episode back.
    left, right = "xss-ep", "solo-ep"
    page.goto(f"{hostile_server.url}/episode?episode={left}&compare={right}")
    wait_for_app_run(page)
    page.get_by_text("Kept paths, turn by turn").first.wait_for()
    button = page.get_by_role("button", name=f"Right: {right}")
    button.scroll_into_view_if_needed()
    entries = page.evaluate("history.length")
    button.click()
    page.wait_for_function(
        "(e) => new URL(window.location.href).searchParams.get('episode') === e", arg=right
    )
    wait_for_app_run(page)
    query = parse_qs(urlparse(page.url).query)
    assert query["episode"] == [right] and query["compare"] == [left]
    assert len(page.context.pages) == 1
    assert page.evaluate("history.length") == entries + 1
    page.get_by_text("Kept paths, turn by turn").first.wait_for()
    page.get_by_role("button", name=f"Right: {left}").wait_for()
    page.get_by_role("heading", name=f"Episode {right}").wait_for()
    page.go_back()
    page.wait_for_function(
        "(e) => new URL(window.location.href).searchParams.get('episode') === e", arg=left
    )
    wait_for_app_run(page)
    page.get_by_role("heading", name=f"Episode {left}").wait_for()


TREE_NODE_JS = """
([box, index]) => {
  const gd = box.querySelector('.js-plotly-plot');
  const trace = gd._fullData.find((t) => t.name === 'calls');
  const i = index < 0 ? trace.customdata.length + index : index;
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const drag = gd.querySelector('.draglayer .nsewdrag').getBoundingClientRect();
  return {call: trace.customdata[i], label: trace.text[i], x: drag.left + xa.l2p(trace.x[i]),
          y: drag.top + ya.l2p(trace.y[i])};
}
"""


def test_a_click_in_compare_s_right_tree_inspects_that_call_in_its_episode(hostile_server, page):
    left, right = "xss-ep", "solo-ep"
    page.goto(f"{hostile_server.url}/episode?episode={left}&compare={right}")
    wait_for_app_run(page)
    expander = page.get_by_test_id("stExpander").filter(has_text="Both trees")
    expander.get_by_text("Both trees").click()
    charts = expander.get_by_test_id("stPlotlyChart")
    charts.nth(1).locator(".scatterlayer .point").first.wait_for()
    charts.nth(1).scroll_into_view_if_needed()
    right_tree = charts.nth(1).element_handle()
    node = click_at(
        page, lambda: right_tree.evaluate("(box, i) => (" + TREE_NODE_JS + ")([box, i])", -1)
    )
    wait_for_app_run(page)
    query = parse_qs(urlparse(page.url).query)
    assert query["episode"] == [right]
    # The right tree's call, in its own episode, which is now compared with the one we left.
    assert query["call"] == [node["call"]]
    assert query["compare"] == [left]
    assert query["section"] == ["call"]
    page.get_by_role("heading", name=f"Episode {right}").wait_for()
    # The inspector shows that call, by the number drawn on the node.
    page.wait_for_function(
        "(n) => document.querySelector('input[aria-label=\"Call\"]').value.trim().startsWith(n)",
        arg=f"call {node['label']} · ",
    )
