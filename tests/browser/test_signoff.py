"""Browser: a curator opens a task by deep link in real Chromium and signs it off."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from conftest import REPO, start_app, stop_app, wait_for_app_run  # noqa: I001 - tests/browser
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
def test_signoff_in_browser(task_server, page):
    server, db_url = task_server
    page.goto(server.url + "/")
    wait_for_app_run(page)
    page.goto(server.url + "/tasks?task=task_0001")
    wait_for_app_run(page)
    page.get_by_role("heading", name="task_0001").wait_for()
    page.get_by_text("revise", exact=True).click()
    page.get_by_label("Reviewer").fill("Dana Browser")
    page.get_by_label("Note").fill("rubric needs a clearer pass bar")
    page.get_by_role("button", name="Save decision").click()
    wait_for_app_run(page)
    page.get_by_text("Saved: revise by Dana Browser.").wait_for(timeout=15_000)
    page.get_by_text("status: revise").wait_for()
    # The name is remembered in this browser session.
    assert page.get_by_label("Reviewer").input_value() == "Dana Browser"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "tw_signoff.png"), full_page=True)
    with Session(get_engine(db_url)) as s:
        [review] = review_history(s, "task_0001")
    assert (review.decision, review.reviewer) == ("revise", "Dana Browser")
    assert review.note == "rubric needs a clearer pass bar"
