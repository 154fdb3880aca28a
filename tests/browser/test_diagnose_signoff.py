"""Browser: a curator diagnoses a ClawGym task through a local OpenAI-compatible endpoint,
judges each finding beside the part it concerns, and signs the task off, in real Chromium."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import REPO, start_app, stop_app, wait_for_app_run  # noqa: I001 - tests/browser
from sqlmodel import Session

from clawviz.jobs.ingest import ingest_paths
from clawviz.review import findings
from clawviz.review.signoff import review_history
from clawviz.store.db import get_engine

sys.path.insert(0, str(REPO))
from tests.dburl import fresh_url  # noqa: E402
from tests.llm_server import ScriptedLLM  # noqa: E402

SHOTS = Path(os.environ.get("CLAWVIZ_SHOTS", "/tmp/shots"))
TASKS = REPO / "sample_logs" / "tasks"
ANSWER = {"findings": [
    {"area": "checker", "severity": "high", "problem": "check_stats never compares the total",
     "suggestion": "assert total == number of CSV rows"},
    {"area": "rubric", "severity": "low", "problem": "rubric rule 1 is checkable in code",
     "suggestion": "move it into check.py"},
]}  # fmt: skip


@pytest.fixture
def review_server(tmp_path):
    url = fresh_url(tmp_path, "diag")
    with Session(get_engine(url)) as s:
        ingest_paths([TASKS], session=s)
        s.commit()
    with ScriptedLLM([("json", ANSWER)]) as llm:
        server = start_app(
            url, tmp_path / "server.log",
            extra_env={"CLAWVIZ_DIAGNOSE_BASE_URL": llm.base_url},
        )  # fmt: skip
        try:
            yield server, url, llm
        finally:
            stop_app(server.process)


@pytest.mark.browser
def test_diagnose_judge_and_sign_off_in_browser(review_server, page):
    server, db_url, llm = review_server
    page.goto(server.url + "/")
    wait_for_app_run(page)
    page.goto(server.url + "/tasks?task=task_0001")
    wait_for_app_run(page)
    page.get_by_role("heading", name="task_0001").wait_for()
    page.get_by_role("textbox", name="Reviewer").fill("Dana Browser")
    page.get_by_role("tab", name="Findings", exact=True).click()
    page.get_by_role("textbox", name="Base URL").fill(llm.base_url)
    page.get_by_role("textbox", name="Model").fill("reviewer-1")
    page.get_by_role("button", name="Diagnose").click()
    wait_for_app_run(page)
    page.get_by_text("2 finding(s) from reviewer-1").wait_for(timeout=30_000)
    assert "check.py" in llm.requests[0]["messages"][1]["content"]
    # The checker finding sits on the Checker tab, beside the code.
    page.get_by_role("tab", name="Checker", exact=True).click()
    page.get_by_text("Problem: check_stats never compares the total").wait_for()
    page.get_by_role("button", name="Valid", exact=True).first.click()
    wait_for_app_run(page)
    page.get_by_text("judged valid").first.wait_for(timeout=15_000)
    page.get_by_role("tab", name="Rubric", exact=True).click()
    page.get_by_role("button", name="Not valid").first.click()
    wait_for_app_run(page)
    page.get_by_role("tab", name="Findings", exact=True).click()
    page.get_by_text("2 finding(s), 0 open").wait_for(timeout=15_000)
    page.get_by_text("revise", exact=True).click()
    page.get_by_role("textbox", name="Note").last.fill("tighten the checker")
    page.get_by_role("button", name="Save decision").click()
    wait_for_app_run(page)
    page.get_by_text("Saved: revise by Dana Browser.").wait_for(timeout=15_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "tw_diagnose.png"), full_page=True)
    with Session(get_engine(db_url)) as s:
        [review] = review_history(s, "task_0001")
        rows = {f.area: f for f in findings.list_findings(s, "task_0001")}
    assert rows["checker"].verdict == "valid" and rows["rubric"].verdict == "not_valid"
    assert rows["checker"].verdict_by == "Dana Browser"
    assert json.loads(review.valid_findings_json) == [rows["checker"].id]
