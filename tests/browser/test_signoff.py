"""Browser: the curator journey in real Chromium: find a task, read its evidence, sign it off."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from conftest import REPO, click_table_row, start_app, stop_app, wait_for_app_run  # noqa: I001 - tests/browser
from sqlmodel import Session

from clawviz.review.signoff import review_history
from clawviz.store.db import get_engine

SHOTS = Path(os.environ.get("CLAWVIZ_SHOTS", "/tmp/shots"))


def _build_task_store(tmp: Path) -> str:
    """The shared tiny task store of the Tasks page tests (tests/app)."""
    path = REPO / "tests" / "app" / "test_tasks_page_store.py"
    spec = importlib.util.spec_from_file_location("_tasks_page_store", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_task_store(tmp)


@pytest.fixture
def task_server(tmp_path):
    url = _build_task_store(tmp_path)
    server = start_app(url, tmp_path / "server.log")
    try:
        yield server, url
    finally:
        stop_app(server.process)


@pytest.mark.browser
def test_curator_reviews_a_task_and_signs_it_off(task_server, page):
    """The curator journey, clicked as a person would: Tasks from the menu, the task from the
    queue, its evidence, a decision (no default), a note, save, the note in the history."""
    server, db_url = task_server
    page.goto(server.url + "/")
    wait_for_app_run(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Tasks").click()
    page.get_by_role("heading", name="Tasks").wait_for()
    wait_for_app_run(page)
    click_table_row(page, page.get_by_test_id("stDataFrame").first, 0)  # task_0001 sorts first
    page.get_by_role("heading", name="task_0001").wait_for()
    wait_for_app_run(page)
    assert "task=task_0001" in page.url
    # The evidence: the attempts with their checks x attempts heatmap, then the checker code.
    page.get_by_role("tab", name="Attempts", exact=True).click()
    page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot").first.wait_for()
    page.get_by_role("tab", name="Checker", exact=True).click()
    page.get_by_text("reward/check.py").first.wait_for()
    # No decision is pre-selected.
    form = page.get_by_test_id("stForm")
    assert form.get_by_role("radio", checked=True).count() == 0
    form.get_by_text("revise", exact=True).click()
    page.get_by_label("Reviewer").fill("Dana Browser")
    page.get_by_label("Note").fill("rubric needs a clearer pass bar")
    page.get_by_role("button", name="Save decision").click()
    wait_for_app_run(page)
    page.get_by_text("Saved: revise by Dana Browser.").wait_for(timeout=15_000)
    page.get_by_text("status: revise").wait_for()
    # The note is cleared for the next decision, the choice too; the name is remembered.
    assert page.get_by_label("Note").input_value() == ""
    assert form.get_by_role("radio", checked=True).count() == 0
    assert page.get_by_label("Reviewer").input_value() == "Dana Browser"
    # The history table shows the note (the grid keeps an accessible copy of its cells).
    history = page.get_by_test_id("stDataFrame").last
    history.get_by_text("rubric needs a clearer pass bar").wait_for(state="attached")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "tw_signoff.png"), full_page=True)
    with Session(get_engine(db_url)) as s:
        [review] = review_history(s, "task_0001")
    assert (review.decision, review.reviewer) == ("revise", "Dana Browser")
    assert review.note == "rubric needs a clearer pass bar"
