"""Several processes signing off at once (reviewers on one team store) keep every review."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sqlmodel import Session, select

from clawviz.store import models
from clawviz.store.db import get_engine
from tests.dburl import fresh_url

REPO = Path(__file__).resolve().parents[1]
N_PROCS = 4
N_EACH = 10
SCRIPT = """
import sys, time
from sqlmodel import Session
from clawviz.review.signoff import add_review
from clawviz.store.db import get_engine
url, who, start, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
engine = get_engine(url)
time.sleep(max(0.0, start - time.time()))
for i in range(n):
    with Session(engine) as s:
        # Every process writes the shared task, and one of its own.
        add_review(s, "task_shared", ("accept", "revise", "reject")[i % 3], who, f"{who} #{i}")
        add_review(s, f"task_{who}", "accept", who, f"{who} own #{i}")
"""


def test_concurrent_signoff_processes_keep_every_review(tmp_path):
    url = fresh_url(tmp_path, "signoff")
    get_engine(url)  # the store exists before the reviewers start
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.time() + 4.0  # every process has imported clawviz by then
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT, url, f"r{k}", str(start), str(N_EACH)],
            env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for k in range(N_PROCS)
    ]  # fmt: skip
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    with Session(get_engine(url)) as s:
        rows = s.exec(select(models.Review)).all()
    notes = sorted(r.note for r in rows)
    want = sorted(
        [f"r{k} #{i}" for k in range(N_PROCS) for i in range(N_EACH)]
        + [f"r{k} own #{i}" for k in range(N_PROCS) for i in range(N_EACH)]
    )
    assert notes == want  # every review once: none lost, none doubled
    assert len({r.id for r in rows}) == len(rows)
    for k in range(N_PROCS):
        own = [r for r in rows if r.task_id == f"task_r{k}"]
        assert {r.reviewer for r in own} == {f"r{k}"}
