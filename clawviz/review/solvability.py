"""Verifiable solvability (PIPELINE §7): a task needs one reference workspace that scores 1.0.

A task's reference solution is its `solution/` folder (or `solution.tar.gz` / `solution.zip`)
beside `input_files/`, or a workspace a curator uploads. `check_reference` runs the task's
checker on it (the same runner, and so the same sandbox, as every checker run) and stores the
outcome; `solvable_status` gives the latest outcome per task for the queue, and a sign-off of
'accept' can be made to require one (setting `require_solvable_for_accept`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session, col, select

from clawviz.review.checker import CheckerResult
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store import SolvabilityRun

SOLUTION_NAMES = ("solution", "solution.tar.gz", "solution.tgz", "solution.zip")
SOLVED_AT = 1.0 - 1e-9


@dataclass(frozen=True)
class Solvability:
    reached: bool
    reward: float | None
    workspace: str
    status: str

    @property
    def label(self) -> str:
        if self.reached:
            return "reached 1.0"
        got = "no reward" if self.reward is None else f"{self.reward:.2f}"
        return f"did not ({got}, {self.status})"


def reference_workspace(task_folder: str | Path | None) -> Path | None:
    """The task's own reference solution, when it ships one."""
    if not task_folder:
        return None
    for name in SOLUTION_NAMES:
        p = Path(task_folder) / name
        if p.exists():
            return p
    return None


def record(session: Session, task_id: str, workspace: str, res: CheckerResult) -> Solvability:
    """Store one reference run and return what it says."""
    row = SolvabilityRun(
        task_id=task_id, workspace=workspace, status=res.status, reward=res.reward,
        scores_json=json.dumps(res.scores), message=res.message,
    )  # fmt: skip
    session.add(row)
    session.commit()
    return _of(row)


def check_reference(
    session: Session, task_id: str, task_folder: str | Path, *,
    settings: Settings = DEFAULT_SETTINGS,
) -> Solvability | None:  # fmt: skip
    """Run the checker on the task's own reference solution; None when it ships none."""
    from clawviz.review.checker import run_checker

    ref = reference_workspace(task_folder)
    if ref is None:
        return None
    res = run_checker(task_folder, ref, settings=settings)
    return record(session, task_id, str(ref.relative_to(task_folder)), res)


def _of(row: SolvabilityRun) -> Solvability:
    reached = row.status == "ok" and row.reward is not None and row.reward >= SOLVED_AT
    return Solvability(reached, row.reward, row.workspace, row.status)


def solvable_status(session: Session) -> dict[str, Solvability]:
    """The latest reference run of every task that has one."""
    stmt = select(SolvabilityRun).order_by(col(SolvabilityRun.created_at), col(SolvabilityRun.id))
    return {r.task_id: _of(r) for r in session.exec(stmt)}
