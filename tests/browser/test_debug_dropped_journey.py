"""The debug journey in a real browser, clicking like a person: Runs -> filter status dropped ->
open a dropped episode -> its tree is greyed and the reason pinned on the failed call -> click
that node -> the inspector names the reason and the call number -> another dropped episode ->
click its kept retry -> read "retry of call N (identical re-send)".

What should be seen comes from sample_logs/expected.json: which episodes are dropped (and the
Runs order task, harness, attempt), which call failed last, which call retried which.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import click_at, click_table_row, pick_runs_filter, wait_for_app_run

from clawviz.figures.palette import CATEGORY_COLOURS, KEPT_IN_DROPPED

pytestmark = pytest.mark.browser

EXPECTED = json.loads((Path(__file__).parents[2] / "sample_logs" / "expected.json").read_text())
DROPPED = sorted(
    (e for e in EXPECTED["episodes"] if e["status"] == "dropped"),
    key=lambda e: (e["task_id"], e["harness"], e["attempt"]),
)

NODE_JS = """
(label) => {
  const gd = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  const trace = gd._fullData.find((t) => t.name === 'calls');
  const i = trace.text.indexOf(label);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.querySelector('.draglayer .nsewdrag').getBoundingClientRect();
  return {
    call: trace.customdata[i],
    colour: trace.marker.color[i],
    colours: trace.marker.color,
    x: box.left + xa.l2p(trace.x[i]),
    y: box.top + ya.l2p(trace.y[i]),
  };
}
"""


def _expected_calls(episode_id: str) -> list[dict]:
    return [c for c in EXPECTED["calls"] if c["episode_id"] == episode_id]


def _filter_dropped(page) -> None:
    pick_runs_filter(page, "Status", "dropped")  # the filters are in a popover
    wait_for_app_run(page)
    page.get_by_text(f"{len(DROPPED)} of {len(EXPECTED['episodes'])} episodes").wait_for()


def _open_row(page, i: int, episode_id: str) -> None:
    """Click the row in the episodes table: one click opens its episode in the same tab."""
    click_table_row(page, page.get_by_test_id("stDataFrame").first, i)
    page.wait_for_url(f"**/episode?episode={episode_id}")


def _open_dropped(page, episode_id: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_text("Runs", exact=True).click()
    wait_for_app_run(page)
    page.get_by_role("heading", name="Runs").wait_for()
    if page.get_by_text(f"{len(DROPPED)} of {len(EXPECTED['episodes'])} episodes").count() == 0:
        _filter_dropped(page)
    _open_row(page, [e["episode_id"] for e in DROPPED].index(episode_id), episode_id)
    page.get_by_role("heading", name=f"Episode {episode_id}").wait_for()
    page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point")
    wait_for_app_run(page)


def _click_node(page, label: str) -> dict:
    node = click_at(page, lambda: page.evaluate(NODE_JS, label), timeout=60_000)
    wait_for_app_run(page)
    return node


def test_debug_a_dropped_episode_like_a_person(app_server, page):
    ended = "t0001-claude-code-a4"
    calls = _expected_calls(ended)
    last_main = max((c for c in calls if c["role"] == "main"), key=lambda c: c["seq"])
    assert last_main["state"] == "failed"  # expected: ended_in_error on this call
    n = str(last_main["line"])

    page.goto(app_server.url + "/")
    page.get_by_role("heading", name="Runs").wait_for()
    wait_for_app_run(page)
    _filter_dropped(page)
    _open_row(page, [e["episode_id"] for e in DROPPED].index(ended), ended)
    page.get_by_role("heading", name=f"Episode {ended}").wait_for()
    page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point")
    wait_for_app_run(page)

    # The tree: greyed kept path, the reason pinned on the failed last call.
    chart = page.get_by_test_id("stPlotlyChart").first
    chart.get_by_text("episode dropped", exact=False).first.wait_for()
    pin = chart.locator(".annotation-text").filter(has_text="ended_in_error")
    assert f"last main call {n} failed (HTTP 500)" in pin.text_content()
    kept = [str(c["line"]) for c in calls if c["state"] == "kept"]
    for label in kept:
        assert page.evaluate(NODE_JS, label)["colour"] == CATEGORY_COLOURS[KEPT_IN_DROPPED]
    assert CATEGORY_COLOURS["kept"] not in page.evaluate(NODE_JS, n)["colours"]
    assert chart.get_by_text("kept path, episode dropped").count() == 1
    assert chart.get_by_text("retried by", exact=False).count() == 1

    # Click the pinned node: the inspector names the reason and the call number.
    _click_node(page, n)
    picker = page.get_by_role("combobox", name="Call", exact=True)
    assert picker.input_value().startswith(f"call {n} · main · failed")
    page.get_by_text(f"This call caused ended_in_error: last main call {n} failed").wait_for()
    retried = next(c for c in calls if c["line"] == last_main["retry_of"]["line"])
    page.get_by_text(f"retry of call {retried['line']} (identical re-send)").wait_for()

    # Another dropped episode with a re-sent request: its kept retry says what it retried.
    resent = "t0001-claude-code-a3"
    kept_retry = next(c for c in _expected_calls(resent) if c["retry_of"] and c["state"] == "kept")
    _open_dropped(page, resent)
    _click_node(page, str(kept_retry["line"]))
    page.get_by_text(
        f"retry of call {kept_retry['retry_of']['line']} (identical re-send)", exact=False
    ).first.wait_for()
