"""Tasks page, LLM-assisted review: Diagnose through a scripted local endpoint, each finding
shown beside the part it concerns, judged valid / not valid, and recorded with the sign-off."""

from __future__ import annotations

import json
from pathlib import Path

from apphelpers import no_exception, open_page
from sqlmodel import Session

from clawviz.jobs.ingest import ingest_paths
from clawviz.review import findings
from clawviz.review.signoff import review_history
from clawviz.store.db import get_engine
from clawviz.ui import findings_widgets as fw
from clawviz.ui import tasks_widgets as w
from tests.dburl import fresh_url
from tests.llm_server import ScriptedLLM

TASKS = Path(__file__).resolve().parents[2] / "sample_logs" / "tasks"
ANSWER = {"findings": [
    {"area": "checker", "severity": "high", "problem": "check_stats never reads the total",
     "suggestion": "compare total with the CSV rows"},
    {"area": "inputs", "severity": "low", "problem": "announcement.txt has no meeting point",
     "suggestion": "add one"},
]}  # fmt: skip


def _buttons(at, label):
    return [b for b in at.button if b.label == label]


def test_diagnose_judge_and_sign_off(tmp_path, on_store):
    url = fresh_url(tmp_path, "findings")
    with Session(get_engine(url)) as s:
        ingest_paths([TASKS], session=s)
        s.commit()
    on_store(url)
    at = open_page("pages/tasks.py", task="task_0001")
    no_exception(at)
    assert any(t.label == "Findings" for t in at.tabs)
    with ScriptedLLM([("json", ANSWER)]) as server:
        at.text_input(key=fw.KEY_BASE_URL).set_value(server.base_url)
        at.text_input(key=fw.KEY_MODEL).set_value("reviewer-1")
        next(b for b in at.button if b.label == "Diagnose").click().run()
    no_exception(at)
    assert any("2 finding(s) from reviewer-1" in s.value for s in at.success)
    assert any(m.value == "**2 finding(s), 2 open**" for m in at.markdown)
    texts = [t.value for t in at.text]
    assert "Problem: check_stats never reads the total" in texts  # beside the checker
    # Judge the checker finding valid and the inputs one not valid, then sign off.
    at.text_input(key=w.KEY_SIGNOFF_REVIEWER).set_value("ana")
    with Session(get_engine(url)) as s:
        checker, inputs = sorted(findings.list_findings(s, "task_0001"), key=lambda f: f.area)
    at.text_input(key=f"finding_note_{checker.id}").set_value("total is unchecked")
    next(b for b in _buttons(at, "Valid") if f"finding_form_{checker.id}" in b.form_id).click()
    at.run()
    no_exception(at)
    next(b for b in _buttons(at, "Not valid") if f"finding_form_{inputs.id}" in b.form_id).click()
    at.run()
    assert not at.error, [e.value for e in at.error]
    assert any(m.value == "**2 finding(s), 0 open**" for m in at.markdown)
    at.radio(key=w.KEY_SIGNOFF_DECISION).set_value("revise")
    next(b for b in at.button if b.label == "Save decision").click().run()
    no_exception(at)
    with Session(get_engine(url)) as s:
        (review,) = review_history(s, "task_0001")
        judged = {f.area: (f.verdict, f.verdict_by, f.verdict_note)
                  for f in findings.list_findings(s, "task_0001")}  # fmt: skip
    assert review.decision == "revise"
    assert json.loads(review.valid_findings_json) == [checker.id]
    assert judged == {"checker": ("valid", "ana", "total is unchecked"),
                      "inputs": ("not_valid", "ana", "")}  # fmt: skip
