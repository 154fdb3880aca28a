"""AppTest of the Tasks page: queue, filters, detail, checker run, sign-off, exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session
from streamlit.testing.v1 import AppTest
from test_tasks_page_store import build_task_store  # noqa: I001 - sibling module of tests/app

from clawviz.review.signoff import review_history
from clawviz.store import models
from clawviz.store.db import get_engine
from clawviz.ui import tasks_widgets as w

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 60


@pytest.fixture
def store(tmp_path, monkeypatch):
    url = build_task_store(tmp_path)
    monkeypatch.setenv("CLAWVIZ_DATABASE_URL", url)
    monkeypatch.setenv("CLAWVIZ_NO_SAMPLES", "1")
    return url


def tasks_page(task: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if task:
        at.query_params["task"] = task
    at.run()
    at.switch_page("pages/tasks.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _title(at) -> str:
    """The page title as a reader sees it (Markdown escapes removed)."""
    return at.title[0].value.replace("\\", "")


def test_queue_lists_tasks_with_filter_terms(store):
    at = tasks_page()
    assert at.title[0].value == "Tasks"
    df = at.dataframe[0].value
    assert set(df["task_id"]) == {"task_0001", "task_0002", "task_pinch_digest"}
    row = df.set_index("task_id").loc["task_0001"]
    assert row["attempts"] == 4 and row["filter"] == "pass" and row["status"] == "pending"
    assert row["s_strong"] == pytest.approx(5 / 6) and row["s_small"] == pytest.approx(0.5)
    assert df.set_index("task_id").loc["task_0002", "filter"] == "n/a"
    # The overall verdict is a key column: first, next to the task, pinned while scrolling.
    proto = at.dataframe[0].proto
    assert list(proto.column_order)[:3] == ["task_id", "filter", "status"]
    config = json.loads(proto.columns)
    assert config["filter"]["pinned"] is True and config["filter"]["label"] == "difficulty filter"
    assert config["s_strong"]["type_config"]["format"] == "%.2f"
    assert proto.placeholder == "—"


def test_queue_filters_and_sort(store):
    at = tasks_page()
    at.selectbox(key=w.KEY_QUEUE_VERDICT).select("pass").run()
    assert list(at.dataframe[0].value["task_id"]) == ["task_0001"]
    at.selectbox(key=w.KEY_QUEUE_VERDICT).select("all").run()
    at.multiselect(key=w.KEY_QUEUE_CATEGORY).select("data").run()
    assert list(at.dataframe[0].value["task_id"]) == ["task_0002"]
    at.multiselect(key=w.KEY_QUEUE_CATEGORY).unselect("data").run()
    at.selectbox(key=w.KEY_QUEUE_SORT).select("attempts (most first)").run()
    assert at.dataframe[0].value["task_id"].iloc[0] == "task_0001"
    at.multiselect(key=w.KEY_QUEUE_STATUS).select("accept").run()
    assert at.dataframe[0].value.empty
    assert not at.exception


def test_open_task_from_picker_sets_deep_link(store):
    at = tasks_page()
    at.selectbox(key=w.KEY_TASK_PICK).select("task_0001").run()
    assert at.query_params["task"] == ["task_0001"] or at.query_params["task"] == "task_0001"
    assert _title(at) == "task_0001"


def test_detail_shows_instruction_safely_files_checker_rubric_attempts(store):
    at = tasks_page("task_0001")
    assert _title(at) == "task_0001"
    md = " ".join(m.value for m in at.markdown)
    # Markdown/HTML in the instruction is escaped, never interpreted.
    assert r"\<script\>" in md and r"\*not bold\*" in md
    codes = [c.value for c in at.code]
    assert any("print(json.dumps" in c for c in codes)  # checker
    assert any(c.startswith("#!/bin/sh") for c in codes)  # reward.sh
    assert any("input_files" not in c and "data/" in c for c in codes)  # file tree
    frames = [d.value for d in at.dataframe]
    assert any("tidy" in set(f.get("name", [])) for f in frames)  # rubric
    attempts = next(f for f in frames if "episode" in f.columns)
    assert len(attempts) == 4
    # A picked attempt offers same-tab links (LinkColumn cells would open new tabs).
    row = list(attempts["episode"]).index("t1-strong-1")
    at.session_state["tasks_attempts_table"] = {
        "selection": {"rows": [row], "columns": [], "cells": []}
    }
    at.run()
    links = {(x.proto.page, x.proto.query_string) for x in at.page_link}
    assert ("workspace", "episode=t1-strong-1") in links
    assert at.get("plotly_chart"), "checks x attempts heatmap missing"
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert fig["data"][0]["type"] == "heatmap" and len(fig["data"][0]["y"]) == 3


def test_input_file_viewer(store):
    at = tasks_page("task_0001")
    at.selectbox(key=w.KEY_INPUT_FILE).select("data/tasks.csv").run()
    csv_frames = [d.value for d in at.dataframe if "status" in d.value.columns]
    assert csv_frames and list(csv_frames[0]["id"]) == ["1", "2"]
    at.selectbox(key=w.KEY_INPUT_FILE).select("config.json").run()
    assert any('"mode":"fast"' in c.value for c in at.code)


def test_run_checker_on_attempt_workspace(store):
    at = tasks_page("task_0001")
    at.selectbox(key=w.KEY_CHECK_ATTEMPT).select("t1-strong-2").run()
    at.button(key=w.KEY_CHECK_RUN).click().run()
    assert not at.exception
    assert any("reward 1.000" in s.value and "solvable" in s.value for s in at.success)
    at.selectbox(key=w.KEY_CHECK_ATTEMPT).select("t1-strong-1").run()
    at.button(key=w.KEY_CHECK_RUN).click().run()
    assert any("reward 0.667" in s.value for s in at.success)
    scores = next(d.value for d in at.dataframe if "check" in d.value.columns)
    assert scores.set_index("check").loc["notes_kept", "result"] == "FAIL"


def test_signoff_saves_and_remembers_reviewer(store):
    at = tasks_page("task_0001")
    at.radio(key=w.KEY_SIGNOFF_DECISION).set_value("revise")
    at.text_input(key=w.KEY_SIGNOFF_REVIEWER).input("Ann Curator")
    at.text_area(key=w.KEY_SIGNOFF_NOTE).input("checker ignores notes.md")
    at.button[[b.label for b in at.button].index("Save decision")].click().run()
    assert not at.exception
    assert any("Saved: revise by Ann Curator" in s.value for s in at.success)
    history = next(d.value for d in at.dataframe if "reviewer" in d.value.columns)
    assert list(history["decision"]) == ["revise"]
    # The name is remembered for the next decision in this browser session.
    assert at.text_input(key=w.KEY_SIGNOFF_REVIEWER).value == "Ann Curator"
    at.radio(key=w.KEY_SIGNOFF_DECISION).set_value("accept")
    at.button[[b.label for b in at.button].index("Save decision")].click().run()
    with Session(get_engine(store)) as s:
        assert [r.decision for r in review_history(s, "task_0001")] == ["revise", "accept"]
    # st.badge is Markdown underneath; the latest decision is now the task's status.
    assert any("status: accept" in m.value for m in at.markdown)


def test_signoff_has_no_default_clears_the_note_and_shows_it_in_the_history(store):
    at = tasks_page("task_0001")
    assert at.radio(key=w.KEY_SIGNOFF_DECISION).value is None  # never a pre-filled "accept"
    at.text_input(key=w.KEY_SIGNOFF_REVIEWER).input("Ann Curator")
    at.text_area(key=w.KEY_SIGNOFF_NOTE).input("no decision yet")
    at.button[[b.label for b in at.button].index("Save decision")].click().run()
    assert any("Choose a decision first" in e.value for e in at.error)
    with Session(get_engine(store)) as s:
        assert review_history(s, "task_0001") == []
    at.radio(key=w.KEY_SIGNOFF_DECISION).set_value("reject")
    at.text_area(key=w.KEY_SIGNOFF_NOTE).input("rubric rewards a wrong answer")
    at.button[[b.label for b in at.button].index("Save decision")].click().run()
    assert not at.exception
    # The note and the choice are cleared for the next decision; the history shows the note.
    assert at.text_area(key=w.KEY_SIGNOFF_NOTE).value == ""
    assert at.radio(key=w.KEY_SIGNOFF_DECISION).value is None
    table = next(d for d in at.dataframe if "reviewer" in d.value.columns)
    assert list(table.value["note"]) == ["rubric rewards a wrong answer"]
    assert list(table.proto.column_order)[:2] == ["decision", "note"]
    labels = [b.label for b in at.get("download_button")]
    assert "Download this task as CSV" in labels and "Download this task as JSON" in labels


def test_signoff_without_name_is_refused(store):
    at = tasks_page("task_0002")
    at.radio(key=w.KEY_SIGNOFF_DECISION).set_value("accept")
    at.button[[b.label for b in at.button].index("Save decision")].click().run()
    assert any("reviewer name is required" in e.value for e in at.error)
    with Session(get_engine(store)) as s:
        assert review_history(s, "task_0002") == []


def test_pinchbench_task_and_unknown_task(store):
    at = tasks_page("task_pinch_digest")
    assert _title(at) == "task_pinch_digest"
    assert any("digest" in m.value for m in at.markdown)
    at = tasks_page("no_such_task")
    assert any("There is no task" in w_.value for w_ in at.warning)


def test_hostile_task_id_and_reviewer_shown_literally(store):
    evil = "task_[x](javascript:alert(1))**b**"
    with Session(get_engine(store)) as s:
        s.add(models.Task(task_id=evil, name="<img src=x onerror=alert(1)>", kind="clawgym"))
        s.commit()
    at = tasks_page(evil)
    assert at.title[0].value == r"task\_\[x\]\(javascript\:alert\(1\)\)\*\*b\*\*"
    assert r"\<img" in " ".join(c.value for c in at.caption)
    at.text_input(key=w.KEY_SIGNOFF_REVIEWER).input("**Mallory**")
    at.radio(key=w.KEY_SIGNOFF_DECISION).set_value("reject")
    at.button[[b.label for b in at.button].index("Save decision")].click().run()
    assert any(r"by \*\*Mallory\*\*" in x.value for x in at.success)


def test_a_long_queue_is_drawn_a_page_at_a_time(store, monkeypatch):
    # A training run has tens of thousands of tasks: the table and the 'Open a task' box hold
    # one page of the filtered, sorted queue; Next shows the following rows, a sort change goes
    # back to the first page.
    from clawviz.ui import tasks as tasks_ui

    every = sorted(list(tasks_page().dataframe[0].value["task_id"]))
    assert len(every) >= 3
    monkeypatch.setattr(tasks_ui, "QUEUE_PAGE", 2)
    at = tasks_page()
    first = list(at.dataframe[0].value["task_id"])
    assert first == every[:2]
    assert at.selectbox(key=w.KEY_TASK_PICK).options[1:] == every[:2]
    assert any("rows 1–2 of" in c.value for c in at.caption)
    at.button(key="tasks_next").click().run()
    assert not at.exception
    assert list(at.dataframe[0].value["task_id"]) == every[2:4]
    assert at.selectbox(key=w.KEY_TASK_PICK).options[1:] == every[2:4]
    at.selectbox(key=w.KEY_TASK_PICK).select(every[2]).run()
    assert _title(at) == every[2]


def test_the_queue_reuses_its_pass_over_attempts_until_one_changes(store, monkeypatch):
    """The pass over every attempt runs once per attempts revision (issue 26 §3): a filter or
    sort change and a sign-off reuse it (the sign-off still shows at once), and an attempt
    written by another process is counted on the next view."""
    import clawviz.review as review

    real, runs = review.attempt_summary, []

    def counting(*args, **kwargs):
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(review, "attempt_summary", counting)
    at = tasks_page()
    assert len(runs) == 1
    before = at.dataframe[0].value.set_index("task_id").loc["task_0002"]
    at.selectbox(key=w.KEY_QUEUE_SORT).select("attempts (most first)").run()
    with Session(get_engine(store)) as s:
        s.add(models.Review(task_id="task_0002", decision="accept", reviewer="ana"))
        s.commit()
    at.run()
    assert len(runs) == 1
    row = at.dataframe[0].value.set_index("task_id").loc["task_0002"]
    assert row["status"] == "accept" and row["attempts"] == before["attempts"]
    # Another process records one more attempt (a strong model's, reward 1).
    with Session(get_engine(store)) as s:
        s.add(models.Result(episode_id="late-attempt", task_id="task_0002", model_role="strong",
                            reward=1.0))  # fmt: skip
        s.commit()
    at.run()
    assert len(runs) == 2
    row = at.dataframe[0].value.set_index("task_id").loc["task_0002"]
    assert row["attempts"] == before["attempts"] + 1
    assert row["s_strong"] != before["s_strong"]
    assert not at.exception
