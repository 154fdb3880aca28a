"""Task sign-off: append-only review decisions; the latest one per task is the task's status."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from clawviz.review.solvability import solvable_status
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store import Finding, Review, Task

DECISIONS = ("accept", "revise", "reject")
EXPORT_FIELDS = (
    "id", "task_id", "decision", "reviewer", "note", "created_at", "valid_findings_json",
)  # fmt: skip


class ReviewError(ValueError):
    """A review that cannot be stored (unknown decision, empty reviewer)."""


def add_review(
    session: Session,
    task_id: str,
    decision: str,
    reviewer: str,
    note: str = "",
    valid_findings: list[int] | None = None,
    *,
    settings: Settings = DEFAULT_SETTINGS,
    require_known_task: bool = False,
) -> Review:
    """Append one decision; never updates or deletes an earlier one. It records the findings
    judged valid at that moment (`valid_findings`, default: read from the store).

    With `require_known_task` (the CLI and the Tasks page), a task id the store does not hold
    is refused: a typo must not become a sign-off nobody can see."""
    decision = (decision or "").strip().lower()
    if decision not in DECISIONS:
        raise ReviewError(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
    reviewer = (reviewer or "").strip()
    if not reviewer:
        raise ReviewError("a reviewer name is required")
    if not (task_id or "").strip():
        raise ReviewError("a task id is required")
    if decision == "accept" and settings.require_solvable_for_accept:
        solved = solvable_status(session).get(task_id)
        if solved is None or not solved.reached:
            raise ReviewError(
                f"{task_id} cannot be accepted yet: no reference workspace has scored 1.0 "
                f"({solved.label if solved else 'never checked'}; setting "
                "require_solvable_for_accept)"
            )
    if require_known_task and session.get(Task, task_id) is None:
        raise ReviewError(
            f"no task {task_id!r} in the store (load its task folder first; "
            "`clawviz tasks` lists the known ones)"
        )
    row = Review(
        task_id=task_id,
        decision=decision,
        reviewer=reviewer,
        note=note or "",
        created_at=datetime.now(UTC),
        valid_findings_json=json.dumps(
            sorted(valid_findings if valid_findings is not None else _valid_ids(session, task_id))
        ),
    )
    session.add(row)
    session.commit()
    session.refresh(row)
    return row


def _valid_ids(session: Session, task_id: str) -> list[int]:
    stmt = select(Finding.id).where(Finding.task_id == task_id, Finding.verdict == "valid")
    return [i for i in session.exec(stmt) if i is not None]


def review_history(session: Session, task_id: str) -> list[Review]:
    """All decisions on a task, oldest first."""
    stmt = (
        select(Review)
        .where(Review.task_id == task_id)
        .order_by(col(Review.created_at), col(Review.id))
    )
    return list(session.exec(stmt))


def latest_reviews(session: Session) -> dict[str, Review]:
    """The latest review of every reviewed task."""
    out: dict[str, Review] = {}
    stmt = select(Review).order_by(col(Review.created_at), col(Review.id))
    for r in session.exec(stmt):
        out[r.task_id] = r
    return out


def _as_dict(r: Review) -> dict:
    created = r.created_at
    if created is not None and created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return {
        "id": r.id,
        "task_id": r.task_id,
        "decision": r.decision,
        "reviewer": r.reviewer,
        "note": r.note,
        "created_at": created.isoformat() if created else None,
        "valid_findings_json": r.valid_findings_json,
    }


_FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: object) -> object:
    """A text cell a spreadsheet would evaluate (leading =, +, -, @, tab or CR) gets a leading
    apostrophe, the OWASP neutralisation for CSV injection; the JSON export keeps the text."""
    if isinstance(value, str) and value.startswith(_FORMULA_LEADS):
        return "'" + value
    return value


def export_reviews(session: Session, fmt: str = "csv", task_id: str | None = None) -> str:
    """Every decision (or one task's) as CSV or JSON text, oldest first."""
    stmt = select(Review).order_by(col(Review.created_at), col(Review.id))
    if task_id is not None:
        stmt = stmt.where(Review.task_id == task_id)
    rows = [_as_dict(r) for r in session.exec(stmt)]
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False)
    if fmt != "csv":
        raise ValueError(f"unknown export format {fmt!r} (csv or json)")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    writer.writerows({k: csv_safe(v) for k, v in row.items()} for row in rows)
    return buf.getvalue()
