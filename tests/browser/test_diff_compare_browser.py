"""Real browser: the call diff draws hostile log text as text (no element, no dialog), and
Compare's links open the other episode in the same tab."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from conftest import start_app, stop_app, wait_for_app_run

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
    boxes = page.locator("[data-testid='stHtml']")
    assert boxes.count() >= 3
    # The tool result the child added is drawn as an added line, literally.
    text = " ".join(boxes.all_inner_texts())
    assert script_text in text
    assert page.locator("[data-testid='stHtml'] script, [data-testid='stHtml'] img").count() == 0
    assert page.locator("[data-testid='stHtml'] a").count() == 0
    assert dialogs == []


def test_compare_link_opens_the_other_episode_in_the_same_tab(hostile_server, page):
    # One server for the module: the hostile store's two episodes are enough to compare.
    left, right = "xss-ep", "solo-ep"
    page.goto(f"{hostile_server.url}/episode?episode={left}&compare={right}")
    wait_for_app_run(page)
    page.get_by_text("Kept paths, turn by turn").first.wait_for()
    link = page.get_by_role("link", name=f"Right: {right}")
    link.scroll_into_view_if_needed()
    assert link.get_attribute("target") in (None, "", "_self")
    link.click()
    page.wait_for_function(
        "(e) => new URL(window.location.href).searchParams.get('episode') === e", arg=right
    )
    wait_for_app_run(page)
    query = parse_qs(urlparse(page.url).query)
    assert query["episode"] == [right] and query["compare"] == [left]
    assert len(page.context.pages) == 1
    page.get_by_text("Kept paths, turn by turn").first.wait_for()
