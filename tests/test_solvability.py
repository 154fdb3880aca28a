"""Verifiable solvability: the checker on a task's reference solution; the queue shows it and
an accept can be made to require it. What 'solved' means comes from the checker's own scores
on workspaces this test builds (one right, one wrong)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import Session

from clawviz.review import solvability
from clawviz.review.signoff import ReviewError, add_review
from clawviz.review.tasks import ingest_task_folder, task_queue
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine
from tests.dburl import fresh_url

CHECK = """
import json, sys
from pathlib import Path
ws = Path(sys.argv[1])
out = ws / "build" / "out.txt"
print(json.dumps({"exists": float(out.exists()),
                  "is_42": float(out.exists() and out.read_text().strip() == "42")}))
"""


def _task(root: Path, task_id: str, answer: str | None) -> Path:
    folder = root / task_id
    (folder / "input_files").mkdir(parents=True)
    (folder / "reward").mkdir()
    (folder / "reward" / "check.py").write_text(CHECK)
    (folder / "data_entry.json").write_text(
        json.dumps({"task_id": task_id, "user_query": "write 42 to build/out.txt"})
    )
    if answer is not None:
        (folder / "solution" / "build").mkdir(parents=True)
        (folder / "solution" / "build" / "out.txt").write_text(answer)
    return folder


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "tasks"
    _task(root, "t_right", "42\n")
    _task(root, "t_wrong", "41\n")
    _task(root, "t_none", None)
    with Session(get_engine(fresh_url(tmp_path, "solv"))) as s:
        ingest_task_folder(s, root)
        s.commit()
        yield s, root


def test_reference_solutions_are_checked_and_shown_in_the_queue(store):
    s, root = store
    right = solvability.check_reference(s, "t_right", root / "t_right")
    wrong = solvability.check_reference(s, "t_wrong", root / "t_wrong")
    assert solvability.check_reference(s, "t_none", root / "t_none") is None
    assert right.reached and right.reward == 1.0 and right.label == "reached 1.0"
    assert not wrong.reached and wrong.reward == 0.5 and wrong.label.startswith("did not (0.50")
    queue = {r.task_id: r.as_dict()["solvable"] for r in task_queue(s)}
    assert queue == {"t_right": "reached 1.0", "t_wrong": wrong.label, "t_none": None}


def test_accept_can_require_a_solved_reference(store):
    s, root = store
    strict = DEFAULT_SETTINGS.with_(require_solvable_for_accept=True)
    with pytest.raises(ReviewError, match="never checked"):
        add_review(s, "t_right", "accept", "ana", settings=strict)
    solvability.check_reference(s, "t_right", root / "t_right")
    solvability.check_reference(s, "t_wrong", root / "t_wrong")
    assert add_review(s, "t_right", "accept", "ana", settings=strict).decision == "accept"
    with pytest.raises(ReviewError, match="did not"):
        add_review(s, "t_wrong", "accept", "ana", settings=strict)
    # revise / reject never need it, and without the setting accept does not either
    assert add_review(s, "t_wrong", "revise", "ana", settings=strict).decision == "revise"
    assert add_review(s, "t_none", "accept", "ana").decision == "accept"


def test_the_latest_reference_run_counts(store):
    s, root = store
    solvability.check_reference(s, "t_wrong", root / "t_wrong")
    shutil.rmtree(root / "t_wrong" / "solution")
    (root / "t_wrong" / "solution" / "build").mkdir(parents=True)
    (root / "t_wrong" / "solution" / "build" / "out.txt").write_text("42")
    solvability.check_reference(s, "t_wrong", root / "t_wrong")
    assert solvability.solvable_status(s)["t_wrong"].reached
