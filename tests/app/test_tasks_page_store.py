"""A tiny task store (two ClawGym tasks, one PinchBench task, four attempts with real
workspaces) shared by the Tasks/Workspace page tests and the sign-off browser test."""

from __future__ import annotations

import json
import shutil
import tarfile
import textwrap
from pathlib import Path

from sqlmodel import Session

from clawviz.review.tasks import ingest_task_folder, task_queue
from clawviz.store import models
from clawviz.store.db import get_engine
from tests.dburl import fresh_url

CHECK_PY = """
import json, sys
from pathlib import Path
ws = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
out = ws / "build" / "out.txt"
print(json.dumps({
    "out_exists": float(out.exists()),
    "out_is_42": float(out.exists() and out.read_text().strip() == "42"),
    "notes_kept": float((ws / "notes.md").exists()),
}, indent=2))
"""

PINCH_MD = """---
id: task_pinch_digest
name: Weekly digest
category: writing
grading_type: hybrid
workspace_files:
  - notes.txt
---

## Prompt

Summarise `notes.txt` into **digest.md**. <b>bold?</b>

## LLM Judge Rubric

### Criterion 1: Faithful (Weight: 100%)
"""


def _clawgym(root: Path, task_id: str, category: str) -> Path:
    folder = root / task_id
    (folder / "input_files" / "data").mkdir(parents=True)
    (folder / "reward").mkdir()
    entry = {
        "task_id": task_id,
        "user_query": f"Write 42 into build/out.txt.\n\nKeep notes.md. <script>alert('{task_id}')"
        "</script> *not bold*",
        "input_mount_dir": "/root/.openclaw/workspace",
        "metadata": {"category": category, "grading_type": "automated"},
    }
    (folder / "data_entry.json").write_text(json.dumps(entry))
    (folder / "input_files" / "data" / "tasks.csv").write_text("id,status\n1,todo\n2,done\n")
    (folder / "input_files" / "notes.md").write_text("# Notes\nkeep me\n")
    (folder / "input_files" / "config.json").write_text('{"mode":"fast","retries":2}')
    (folder / "reward" / "check.py").write_text(textwrap.dedent(CHECK_PY))
    (folder / "reward" / "reward.sh").write_text('#!/bin/sh\npython3 check.py "$1"\n')
    rubric = [{"name": "tidy", "weight": 1.0, "description": "output is tidy"}]
    (folder / "reward" / "rubric.json").write_text(json.dumps(rubric))
    return folder


def _after(before: Path, dest: Path, *, right: bool, keep_notes: bool) -> Path:
    shutil.copytree(before, dest)
    (dest / "build").mkdir()
    (dest / "build" / "out.txt").write_text("42\n" if right else "41\n")
    (dest / "data" / "tasks.csv").write_text("id,status\n1,done\n2,done\n")
    (dest / "config.json").write_text('{"mode":"slow","retries":2}')
    (dest / "build" / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    if not keep_notes:
        (dest / "notes.md").unlink()
    return dest


def build_task_store(tmp: Path) -> str:
    """Write the task folders and workspaces under `tmp` and a store; return the store URL."""
    tasks_root = tmp / "tasks"
    t1 = _clawgym(tasks_root, "task_0001", "ops")
    _clawgym(tasks_root, "task_0002", "data")
    (tasks_root / "pinch").mkdir()
    (tasks_root / "pinch" / "task_pinch_digest.md").write_text(PINCH_MD)
    (tasks_root / "pinch" / "task_pinch_digest").mkdir()
    (tasks_root / "pinch" / "task_pinch_digest" / "notes.txt").write_text("note 1\n")

    ws = tmp / "workspaces"
    ws.mkdir()
    before = t1 / "input_files"
    a_strong1 = _after(before, ws / "strong1", right=True, keep_notes=False)
    a_small1 = _after(before, ws / "small1", right=False, keep_notes=True)
    staged = _after(before, ws / "strong2_dir", right=True, keep_notes=True)
    a_strong2 = ws / "strong2.tar.gz"
    with tarfile.open(a_strong2, "w:gz") as tf:
        tf.add(staged, arcname=".")
    shutil.rmtree(staged)

    url = fresh_url(tmp, "tasks")
    with Session(get_engine(url)) as s:
        ingest_task_folder(s, tasks_root)
        attempts = [
            ("t1-strong-1", "strong", 1, {"out_exists": 1, "out_is_42": 1, "notes_kept": 0},
             a_strong1),
            ("t1-strong-2", "strong", 2, {"out_exists": 1, "out_is_42": 1, "notes_kept": 1},
             a_strong2),
            ("t1-small-1", "small", 1, {"out_exists": 1, "out_is_42": 0, "notes_kept": 1},
             a_small1),
            ("t1-small-2", "small", 2, {"out_exists": 0, "out_is_42": 0, "notes_kept": 1}, None),
        ]  # fmt: skip
        for eid, role, n, checks, after in attempts:
            s.add(
                models.Result(
                    episode_id=eid,
                    task_id="task_0001",
                    harness="openclaw",
                    model=f"{role}-model",
                    model_role=role,
                    attempt=n,
                    reward=sum(checks.values()) / len(checks),
                    checks_json=json.dumps(checks),
                    workspace_before=str(before) if after else None,
                    workspace_after=str(after) if after else None,
                )
            )
        s.commit()
    return url


def test_builder_makes_a_queue(tmp_path):
    url = build_task_store(tmp_path)
    with Session(get_engine(url)) as s:
        rows = {r.task_id: r for r in task_queue(s)}
    assert set(rows) == {"task_0001", "task_0002", "task_pinch_digest"}
    t1 = rows["task_0001"]
    assert t1.n_attempts == 4 and t1.filter.passed is True
