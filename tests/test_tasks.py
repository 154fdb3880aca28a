"""Task loading (ClawGym folders, PinchBench markdown), queue, difficulty filter, detail."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, SQLModel

from clawviz.review.signoff import add_review
from clawviz.review.tasks import (
    TaskFormatError,
    difficulty_filter,
    ingest_task_folder,
    load_task_folder,
    parse_pinchbench,
    task_detail,
    task_queue,
)
from clawviz.store import models
from tests.dburl import memory_engine

PINCH_PLAIN = """id: task_sum_off_by_one
name: Fix off-by-one error
category: coding
grading_type: automated
timeout_seconds: 120
workspace_files:
  - sum.py
  - test_sum.py

## Prompt

Fix `sum_n(n)` so that tests pass.

## Grading Criteria

- All tests pass

## Automated Checks

```python
def grade(transcript, workspace_path):
    return {"ok": 1.0}
```
"""

PINCH_FENCED = """---
id: task_csv_report
name: CSV report
category: finance
grading_type: llm_judge
timeout_seconds: 180
workspace_files:
  - source: csvs/apple.csv
    dest: apple.csv
---

## Prompt

Write `finance_report.md`.

---

## LLM Judge Rubric

### Criterion 1: Accuracy (Weight: 60%)
"""


@pytest.fixture
def session():
    engine = memory_engine()
    SQLModel.metadata.create_all(engine)
    with Session(engine) as s:
        yield s


def make_clawgym(root, task_id, category="ops", rubric=True):
    folder = root / task_id
    (folder / "input_files" / "data").mkdir(parents=True)
    (folder / "reward").mkdir()
    entry = {
        "task_id": task_id,
        "user_query": f"Do the thing for {task_id}. <script>alert(1)</script>",
        "input_mount_dir": "/root/.openclaw/workspace",
        "metadata": {"category": category, "grading_type": "automated"},
    }
    (folder / "data_entry.json").write_text(json.dumps(entry))
    (folder / "input_files" / "data" / "tasks.csv").write_text("id,status\n1,todo\n")
    (folder / "reward" / "check.py").write_text("print('{}')\n")
    (folder / "reward" / "reward.sh").write_text("#!/bin/sh\necho 1.0\n")
    if rubric:
        rubric_rows = [{"name": "clear", "weight": 1.0, "description": "is clear"}]
        (folder / "reward" / "rubric.json").write_text(json.dumps(rubric_rows))
    return folder


def test_load_single_clawgym_folder(tmp_path):
    folder = make_clawgym(tmp_path, "task_0007")
    [task] = load_task_folder(folder)
    assert task.task_id == "task_0007" and task.kind == "clawgym"
    assert task.category == "ops" and task.grading_type == "automated"
    assert task.instruction.startswith("Do the thing")
    assert json.loads(task.data_json)["input_mount_dir"] == "/root/.openclaw/workspace"


def test_empty_category_is_none(tmp_path):
    [task] = load_task_folder(make_clawgym(tmp_path, "task_0001", category=""))
    assert task.category is None


def test_load_folder_of_many_tasks_mixed(tmp_path):
    bench = tmp_path / "bench"
    for i in range(12):
        make_clawgym(bench / "clawgym_eval", f"task_{i:04d}")
    (bench / "tasks").mkdir()
    (bench / "tasks" / "task_sum_off_by_one.md").write_text(PINCH_PLAIN)
    (bench / "tasks" / "task_csv_report.md").write_text(PINCH_FENCED)
    (bench / "tasks" / "README.md").write_text("# not a task\n")
    tasks = load_task_folder(bench)
    ids = [t.task_id for t in tasks]
    assert len(ids) == 14 and len(set(ids)) == 14
    assert "task_0011" in ids and "task_csv_report" in ids


def test_bad_data_entry_names_the_file(tmp_path):
    folder = tmp_path / "task_bad"
    folder.mkdir()
    (folder / "data_entry.json").write_text("{not json")
    with pytest.raises(TaskFormatError, match=r"task_bad/data_entry.json"):
        load_task_folder(folder)


def test_parse_pinchbench_plain_and_fenced():
    front, sections = parse_pinchbench(PINCH_PLAIN)
    assert front["id"] == "task_sum_off_by_one" and front["timeout_seconds"] == 120
    assert front["workspace_files"] == ["sum.py", "test_sum.py"]
    assert sections["Prompt"] == "Fix `sum_n(n)` so that tests pass."
    assert "def grade" in sections["Automated Checks"]
    front, sections = parse_pinchbench(PINCH_FENCED)
    assert front["workspace_files"] == [{"source": "csvs/apple.csv", "dest": "apple.csv"}]
    assert sections["Prompt"] == "Write `finance_report.md`."
    assert "Criterion 1" in sections["LLM Judge Rubric"]


def test_pinchbench_detail(tmp_path, session):
    tasks_dir = tmp_path / "tasks"
    (tasks_dir / "task_sum_off_by_one").mkdir(parents=True)
    (tasks_dir / "task_sum_off_by_one" / "sum.py").write_text("def sum_n(n): ...\n")
    (tasks_dir / "task_sum_off_by_one.md").write_text(PINCH_PLAIN)
    ingest_task_folder(session, tasks_dir)
    d = task_detail(session, "task_sum_off_by_one")
    assert d.task.kind == "pinchbench" and d.input_files == ["sum.py"]
    assert d.checker_code.startswith("def grade") and "```" not in d.checker_code


@pytest.mark.parametrize(
    "s_strong, s_small, terms, overall",
    [
        (0.2, 0.1, [True, True, True], True),  # exactly 0.2 passes
        (0.7, 0.6, [True, True, True], True),  # exactly 0.6 passes
        (0.5, 0.5, [True, True, False], False),  # equal fails
        (0.19, 0.0, [False, True, True], False),
        (0.9, 0.61, [True, False, True], False),
        (0.1, 0.3, [False, True, False], False),
        (None, 0.3, [None, True, None], None),
        (None, None, [None, None, None], None),
    ],
)
def test_difficulty_filter_boundaries(s_strong, s_small, terms, overall):
    f = difficulty_filter(s_strong, s_small)
    assert [t.passed for t in f.terms] == terms
    assert f.passed is overall


def test_filter_mean_of_floats_hits_boundary_exactly():
    # 0.1 + 0.1 + 0.4 + 0.2 over 4 is 0.2 up to float error; it must still pass.
    s = sum([0.1, 0.1, 0.4, 0.2]) / 4
    assert difficulty_filter(s, 0.0).terms[0].passed is True


def _result(session, eid, task_id, role, reward, checks, after=None):
    session.add(
        models.Result(
            episode_id=eid,
            task_id=task_id,
            harness="openclaw",
            model="m-" + role,
            model_role=role,
            attempt=int(eid[-1]),
            reward=reward,
            checks_json=json.dumps(checks),
            workspace_after=after,
        )
    )


def test_queue_and_detail(tmp_path, session):
    for tid in ("task_0001", "task_0002"):
        make_clawgym(tmp_path, tid)
    ingest_task_folder(session, tmp_path)
    for i, r in enumerate([0.5, 0.6, 0.4, 0.7]):
        _result(session, f"t1-strong-{i}", "task_0001", "strong", r, {"a": r, "b": 1.0})
    for i, r in enumerate([0.0, 0.2, 0.1, 0.1]):
        _result(session, f"t1-small-{i}", "task_0001", "small", r, {"a": r, "c": 0.0})
    _result(session, "orphan-x1", "task_9999", "strong", 0.3, {})
    session.add(models.Episode(episode_id="t2-ep-1", task_id="task_0002", n_calls=3))
    session.commit()
    add_review(session, "task_0001", "revise", "ann", "checker too lax")
    add_review(session, "task_0001", "accept", "bob", "fine now")

    rows = {r.task_id: r for r in task_queue(session)}
    assert set(rows) == {"task_0001", "task_0002", "task_9999"}
    t1 = rows["task_0001"]
    assert t1.n_attempts == 8 and t1.n_strong == 4 and t1.n_small == 4
    assert t1.s_strong == pytest.approx(0.55) and t1.s_small == pytest.approx(0.1)
    assert t1.filter.passed is True and t1.status == "accept" and t1.reviewer == "bob"
    assert t1.category == "ops"
    t2 = rows["task_0002"]
    assert t2.status == "pending" and t2.n_attempts == 1 and t2.filter.passed is None
    assert rows["task_9999"].kind == "unknown"
    as_json = json.loads(json.dumps(t1.as_dict()))
    assert [t["passed"] for t in as_json["filter_terms"]] == [True, True, True]

    d = task_detail(session, "task_0001")
    assert d.input_files == ["data/tasks.csv"]
    assert "print" in d.checker_code and d.reward_script.startswith("#!/bin/sh")
    assert d.rubric == [{"name": "clear", "weight": 1.0, "description": "is clear"}]
    assert len(d.attempts) == 8 and d.status == "accept"
    assert [r.decision for r in d.reviews] == ["revise", "accept"]
    assert sorted(d.matrix.checks) == ["a", "b", "c"]
    assert len(d.matrix.attempts) == 8
    a_row = d.matrix.values[d.matrix.checks.index("a")]
    assert sorted(a_row) == sorted([0.5, 0.6, 0.4, 0.7, 0.0, 0.2, 0.1, 0.1])
    small_col = d.matrix.attempts.index("t1-small-0")
    # Check b is absent from the small attempts.
    assert d.matrix.values[d.matrix.checks.index("b")][small_col] is None
    assert task_detail(session, "nope") is None
    assert task_detail(session, "task_9999").task.kind == "unknown"


def test_upsert_is_idempotent(tmp_path, session):
    make_clawgym(tmp_path, "task_0001")
    ingest_task_folder(session, tmp_path)
    ingest_task_folder(session, tmp_path)
    assert len(task_queue(session)) == 1


def test_result_without_task_id_counts_for_its_episodes_task(session):
    session.add(models.Episode(episode_id="ep-a", task_id="task_x", model_role="strong"))
    session.add(models.Episode(episode_id="ep-b", task_id="task_x", model_role="small"))
    session.add(models.Result(episode_id="ep-a", reward=0.8))
    session.add(models.Result(episode_id="ep-b", task_id="task_x", reward=0.1))
    session.commit()
    [row] = task_queue(session)
    assert (row.task_id, row.n_attempts, row.s_strong, row.s_small) == ("task_x", 2, 0.8, 0.1)
    d = task_detail(session, "task_x")
    assert sorted(a.reward for a in d.attempts) == [0.1, 0.8]


def test_folder_of_200_tasks_loads_quickly(tmp_path, session):
    import time

    for i in range(200):
        make_clawgym(tmp_path / "clawgym_eval", f"task_{i:04d}", rubric=False)
    t0 = time.monotonic()
    tasks = ingest_task_folder(session, tmp_path)
    assert len(tasks) == 200
    assert len(task_queue(session)) == 200
    assert time.monotonic() - t0 < 10
