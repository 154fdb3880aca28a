"""Real browser: Back / Forward walk the selections one entry at a time, the Episode page
remembers its episode across pages, and no page asks the internet for anything."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import click_table_row, wait_for_app_run
from test_episode_click import click_node

pytestmark = pytest.mark.browser

RECORD_HISTORY = """
window.__history = [];
for (const name of ['pushState', 'replaceState']) {
  const original = history[name].bind(history);
  history[name] = (state, title, url) => {
    window.__history.push([name, String(url)]);
    return original(state, title, url);
  };
}
"""
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
EXPECTED = json.loads((Path(__file__).parents[2] / "sample_logs" / "expected.json").read_text())
RUNS_ORDER = [
    e["episode_id"]
    for e in sorted(EXPECTED["episodes"], key=lambda e: (e["task_id"], e["harness"], e["attempt"]))
]
"""The sample episodes in the Runs table's order (task, harness, attempt), from the scenario."""


@pytest.fixture(autouse=True)
def outside(page):
    """Every request of the test that leaves the machine (aborted), checked at its end."""
    seen: list[str] = []

    def guard(route):
        url = route.request.url
        if url.startswith(("data:", "blob:")) or urlparse(url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            seen.append(url)
            route.abort()

    page.context.route("**/*", guard)
    yield seen
    assert seen == [], f"requests to the internet: {seen}"


def _history(page) -> list[list[str]]:
    """pushState / replaceState calls since the last look (recorded by RECORD_HISTORY)."""
    return page.evaluate("window.__history.splice(0)")


def _query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def _path(page) -> str:
    return urlparse(page.url).path


def _heading(page) -> str:
    return page.locator("h1").first.inner_text()


def _call_box(page) -> str:
    return page.get_by_role("combobox", name="Call", exact=True).input_value()


def _settle(page) -> None:
    wait_for_app_run(page)
    page.wait_for_timeout(500)
    wait_for_app_run(page)


def test_back_and_forward_walk_one_selection_at_a_time(app_server, page):
    page.add_init_script(RECORD_HISTORY)
    page.goto(app_server.url + "/")
    page.get_by_test_id("stDataFrame").first.wait_for()
    _settle(page)
    _history(page)
    # One click on a row opens its episode (issue 25 §3), in the same tab.
    click_table_row(page, page.get_by_test_id("stDataFrame").first, 1)
    page.wait_for_url("**/episode?episode=*")
    episode = RUNS_ORDER[1]
    page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point")
    _settle(page)
    assert _query(page) == {"episode": [episode]}
    # One entry for the click: the row's own page link, followed (not st.switch_page: two).
    assert _history(page) == [["pushState", f"/episode?episode={episode}"]]
    default_call = _call_box(page)

    target = click_node(page, -1)
    _settle(page)
    clicked_call = _call_box(page)
    assert clicked_call != default_call
    # Exactly one entry for the click, and nothing replaced it afterwards.
    pushes = _history(page)
    assert [kind for kind, _ in pushes] == ["pushState"], pushes
    assert parse_qs(urlparse(pushes[0][1]).query)["call"] == [target["call"]]

    page.go_back()
    page.wait_for_function("() => !new URL(location.href).searchParams.has('call')")
    _settle(page)
    assert _path(page) == "/episode" and _query(page) == {"episode": [episode]}
    assert _call_box(page) == default_call  # the page follows the URL back
    assert episode in _heading(page)

    page.go_back()
    page.wait_for_function("() => location.pathname === '/'")
    _settle(page)
    assert _query(page) == {}  # Runs, with no stale ?episode=&call=
    assert _heading(page).startswith("Runs")

    page.go_forward()
    page.wait_for_function("() => location.pathname === '/episode'")
    _settle(page)
    assert _query(page) == {"episode": [episode]}
    page.go_forward()
    page.wait_for_function("() => new URL(location.href).searchParams.has('call')")
    _settle(page)
    assert _call_box(page) == clicked_call
    # Back and Forward replay entries (Streamlit replaces while it replays), never push.
    assert all(kind == "replaceState" for kind, _ in _history(page))


def _segment(page, name: str):
    """A segment of an st.segmented_control (a radio group to assistive tech), by its label."""
    return page.get_by_test_id("stButtonGroup").get_by_role("radio", name=name, exact=True)


def _chosen(page) -> list[str]:
    """The labels of every segmented control's chosen segment, top to bottom."""
    group = page.get_by_test_id("stButtonGroup")
    return group.locator("[role='radio'][aria-checked='true']").all_inner_texts()


def test_a_deep_link_opens_its_section_and_back_walks_the_picks(app_server, page):
    episode = "t0001-openclaw-a2"
    page.add_init_script(RECORD_HISTORY)
    page.goto(f"{app_server.url}/episode?episode={episode}&section=paths")
    page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point")
    page.get_by_test_id("stDataFrame").first.wait_for()
    _settle(page)
    # Only the Paths section is drawn: its table, no call inspector.
    assert _chosen(page) == ["state", "Paths"]
    assert page.get_by_role("combobox", name="Call", exact=True).count() == 0
    _history(page)

    _segment(page, "Call").click()
    page.wait_for_function("() => !new URL(location.href).searchParams.has('section')")
    _settle(page)
    assert [k for k, _ in _history(page)] == ["pushState"]
    assert page.get_by_test_id("stDataFrame").count() == 0
    assert _chosen(page) == ["state", "Call", "Request (vs parent)"]
    default_call = _call_box(page)

    _segment(page, "Tokens").click()
    page.wait_for_function("() => new URL(location.href).searchParams.get('panel') === 'tokens'")
    _settle(page)
    assert [k for k, _ in _history(page)] == ["pushState"]
    assert _query(page) == {"episode": [episode], "panel": ["tokens"]}
    page.get_by_text(
        re.compile("No token ids were logged|Context tokens|Generated tokens")
    ).first.wait_for()

    # Back walks the picks one at a time, and the page follows the URL.
    page.go_back()
    page.wait_for_function("() => !new URL(location.href).searchParams.has('panel')")
    _settle(page)
    assert _chosen(page) == ["state", "Call", "Request (vs parent)"]
    assert _call_box(page) == default_call
    page.go_back()
    page.wait_for_function("() => new URL(location.href).searchParams.get('section') === 'paths'")
    page.get_by_test_id("stDataFrame").first.wait_for()
    _settle(page)
    assert _chosen(page) == ["state", "Paths"]
    assert all(kind == "replaceState" for kind, _ in _history(page))

    # A click on a tree node from the Paths section inspects that call (one entry).
    target = click_node(page, -1)
    _settle(page)
    assert _query(page) == {"episode": [episode], "call": [target["call"]]}
    assert [k for k, _ in _history(page)] == ["pushState"]
    assert _chosen(page) == ["state", "Call", "Request (vs parent)"]
    assert _call_box(page).startswith(f"call {target['label']} · ")


def test_filters_push_entries_and_the_episode_is_remembered(app_server, page):
    page.add_init_script(RECORD_HISTORY)
    page.goto(app_server.url + "/?status=dropped")
    page.get_by_test_id("stDataFrame").first.wait_for()
    _settle(page)
    # A pasted URL restores the filter.
    page.get_by_text("episodes · click a row to open it").wait_for()
    shown = page.get_by_text("episodes · click a row to open it").inner_text()
    assert shown.split(" of ")[0] != shown.split(" of ")[1].split()[0], shown
    _history(page)
    page.get_by_role("button", name="Filters").click()  # the filters are in a popover
    page.get_by_text("Include episodes without reward").click()
    page.wait_for_function("() => new URL(location.href).searchParams.get('no_reward') === '0'")
    _settle(page)
    assert [k for k, _ in _history(page)] == ["pushState"]
    assert _query(page) == {"status": ["dropped"], "no_reward": ["0"]}
    page.go_back()
    page.wait_for_function("() => !new URL(location.href).searchParams.has('no_reward')")
    _settle(page)
    if not page.get_by_role("checkbox", name="Include episodes without reward").is_visible():
        page.get_by_role("button", name="Filters").click()
    assert page.get_by_role("checkbox", name="Include episodes without reward").is_checked()

    # Episode -> Tasks -> Episode (both from the menu) shows the same episode again.
    page.goto(app_server.url + "/episode?episode=t0001-openclaw-a2")
    page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot")
    _settle(page)
    nav = page.get_by_test_id("stSidebarNav")
    nav.get_by_role("link", name="Tasks").click()
    page.wait_for_function("() => location.pathname === '/tasks'")
    _settle(page)
    nav.get_by_role("link", name="Episode").click()
    page.wait_for_function("() => location.pathname === '/episode'")
    page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot")
    _settle(page)
    assert "t0001-openclaw-a2" in _heading(page)
    # Next walks the Runs order.
    page.get_by_role("button", name="Next").click()
    page.wait_for_function("() => new URL(location.href).searchParams.has('episode')")
    _settle(page)
    assert _query(page)["episode"] != ["t0001-openclaw-a2"]
    assert _query(page)["episode"][0] in _heading(page)


def test_no_page_asks_the_internet(app_server, page, outside):
    # The other tests of this module run under the same guard (the `outside` fixture); this
    # one visits the pages they do not, through the menu as a person would.
    page.goto(app_server.url + "/tasks?task=task_0001")
    page.get_by_role("heading", name="task_0001").wait_for()
    _settle(page)
    nav = page.get_by_test_id("stSidebarNav")
    for name, path in (("Workspace diff", "/workspace"), ("Ingest", "/ingest"),
                       ("Settings", "/settings")):  # fmt: skip
        nav.get_by_role("link", name=name).click()
        page.wait_for_function("(p) => location.pathname === p", arg=path)
        _settle(page)
    icon = page.locator("link[rel~='icon']").first.get_attribute("href") or ""
    host = urlparse(icon).hostname
    assert icon and (host is None or host in LOCAL_HOSTS), icon
