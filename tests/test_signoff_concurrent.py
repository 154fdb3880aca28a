"""Several processes signing off at once (reviewers on one team store) keep every review."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlmodel import Session, select

from clawviz.store import models
from clawviz.store.db import get_engine
from tests.dburl import fresh_url

REPO = Path(__file__).resolve().parents[1]
N_PROCS = 4
N_EACH = 10
SCRIPT = """
import sys
from sqlmodel import Session
from clawviz.review.signoff import add_review
from clawviz.store.db import get_engine
url, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = get_engine(url)
with engine.connect():
    pass  # connected, imports done: ready
print("ready", flush=True)
sys.stdin.readline()  # the start gate: every reviewer writes from the same moment
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
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT, url, f"r{k}", str(N_EACH)],
            env=env, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        for k in range(N_PROCS)
    ]  # fmt: skip
    # A barrier across the processes instead of a start time guessed ahead: each one says it is
    # ready (imported, connected) and waits on its stdin; once all are, every gate opens.
    for proc in procs:
        assert proc.stdout is not None and proc.stdin is not None
        line = proc.stdout.readline()
        assert line == "ready\n", (line, proc.stderr.read() if proc.stderr else "")
    for proc in procs:
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
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
