"""Tasks and Workspace pages on the bundled sample store (sample_logs/ ingested once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page  # noqa: I001 - sibling module of tests/app
from sqlmodel import Session

from clawviz.review.checker import run_checker
from clawviz.review.tasks import attempt_workspaces, task_detail, task_queue
from clawviz.store.db import get_engine
from clawviz.ui import tasks_widgets as w

SAMPLE_LOGS = Path(__file__).resolve().parents[2] / "sample_logs"
ARCHIVE_ATTEMPTS = {
    "t0001-claude-code-a1": "after.tar.gz",
    "91c5da3e-bbfa-45a9-8484-e1a76abf818e": "after.zip",
    "t0003-claude-code-a2": "before.tar.gz",
}


@pytest.fixture
def sample_store(sample_db_url, monkeypatch):
    monkeypatch.setenv("CLAWVIZ_DATABASE_URL", sample_db_url)
    monkeypatch.setenv("CLAWVIZ_NO_SAMPLES", "1")
    return sample_db_url


def test_difficulty_filter_matches_the_generator(sample_db_url):
    expected = json.loads((SAMPLE_LOGS / "expected.json").read_text())["difficulty"]
    with Session(get_engine(sample_db_url)) as s:
        rows = {r.task_id: r for r in task_queue(s)}
    for task_id, exp in expected.items():
        row = rows[task_id]
        assert row.s_strong == pytest.approx(exp["s_strong"], abs=1e-5), task_id
        assert row.s_small == pytest.approx(exp["s_small"], abs=1e-5), task_id
        assert row.filter.passed is exp["passes"], task_id
    assert rows["task_weekly_digest"].kind == "pinchbench"


def test_checker_reproduces_a_recorded_reward(sample_db_url):
    with Session(get_engine(sample_db_url)) as s:
        ws = attempt_workspaces(s, "91c5da3e-bbfa-45a9-8484-e1a76abf818e")
    assert ws.after.endswith("after.zip")
    res = run_checker(ws.task.folder, ws.after, timeout_s=60)
    assert res.status == "ok", res.message
    assert res.scores == ws.attempt.checks and res.reward == pytest.approx(ws.attempt.reward)


def test_queue_and_every_task_detail_render(sample_store):
    at = open_page("pages/tasks.py")
    no_exception(at)
    table = at.dataframe[0].value
    assert {"task_0001", "task_0002", "task_0003", "task_weekly_digest"} <= set(table["task_id"])
    with Session(get_engine(sample_store)) as s:
        n_attempts = {t: len(task_detail(s, t).attempts) for t in table["task_id"]}
    for task_id in table["task_id"]:
        at = open_page("pages/tasks.py", task=task_id)
        no_exception(at)
        assert at.title[0].value.replace("\\", "") == task_id
        if n_attempts[task_id]:
            assert at.get("plotly_chart"), f"{task_id}: no checks heatmap"


@pytest.mark.parametrize("episode_id", sorted(ARCHIVE_ATTEMPTS))
def test_workspace_page_opens_archived_workspaces(sample_store, episode_id):
    at = open_page("pages/workspace.py", episode=episode_id)
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    changed = sum(int(metrics[f"{w_} {s}"]) for w_, s in (("A", "added"), ("M", "modified")))
    assert changed > 0
    assert at.selectbox(key=w.KEY_WS_FILE).options
