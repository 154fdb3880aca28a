"""Findings of task diagnoses in the store: saved from a diagnosis or imported from a findings
JSONL made elsewhere, judged valid / not valid by a reviewer, counted per task for the queue.

A findings JSONL line is `{"task_id": ..., "findings": [{area, severity, problem, suggestion}],
"model": ...}` (one task per line) or one finding per line with its `task_id`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlmodel import Session, col, select

from clawviz.ingest import is_findings_record
from clawviz.review.diagnosis import Diagnosis, FindingModel
from clawviz.review.tasks import open_findings_per_task
from clawviz.store import DiagnosisRun, Finding

VERDICTS = ("valid", "not_valid")


class FindingError(ValueError):
    """A judgement or an imported record that cannot be stored."""


def save_diagnosis(session: Session, d: Diagnosis, *, source: str = "llm") -> DiagnosisRun:
    """Store one diagnosis run and its findings."""
    run = DiagnosisRun(
        task_id=d.task_id, model=d.model, prompt_hash=d.prompt_hash,
        prompt_version=d.prompt_version, source=source, input_tokens=d.input_tokens,
        output_tokens=d.output_tokens, seconds=d.seconds, n_findings=len(d.findings),
        error=d.error,
    )  # fmt: skip
    session.add(run)
    session.flush()
    for found in d.findings:
        f: dict[str, Any] = dict(found)
        session.add(
            Finding(
                run_id=run.id, task_id=d.task_id, model=d.model, prompt_hash=d.prompt_hash, **f
            )  # fmt: skip
        )
    session.commit()
    session.refresh(run)
    return run


def list_findings(session: Session, task_id: str) -> list[Finding]:
    stmt = (
        select(Finding)
        .where(Finding.task_id == task_id)
        .order_by(col(Finding.created_at), col(Finding.id))
    )
    return list(session.exec(stmt))


def runs_of(session: Session, task_id: str) -> list[DiagnosisRun]:
    stmt = (
        select(DiagnosisRun)
        .where(DiagnosisRun.task_id == task_id)
        .order_by(col(DiagnosisRun.created_at), col(DiagnosisRun.id))
    )
    return list(session.exec(stmt))


def judge(
    session: Session, finding_id: int, verdict: str, reviewer: str, note: str = ""
) -> Finding:
    """Record a reviewer's verdict on one finding (a later verdict replaces an earlier one;
    the sign-off keeps which findings were valid when it was made)."""
    if verdict not in VERDICTS:
        raise FindingError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    if not (reviewer or "").strip():
        raise FindingError("a reviewer name is required")
    row = session.get(Finding, finding_id)
    if row is None:
        raise FindingError(f"no finding {finding_id}")
    row.verdict, row.verdict_note = verdict, note or ""
    row.verdict_by, row.verdict_at = reviewer.strip(), datetime.now(UTC)
    session.add(row)
    session.commit()
    session.refresh(row)
    return row


def valid_finding_ids(session: Session, task_id: str) -> list[int]:
    return [f.id for f in list_findings(session, task_id) if f.verdict == "valid" and f.id]


def open_counts(session: Session) -> dict[str, int]:
    """Findings not yet judged, per task (the queue's 'open findings' column)."""
    return open_findings_per_task(session)


@dataclass
class ImportReport:
    runs: int = 0
    findings: int = 0
    rejected: list[tuple[int, str]] | None = None


def import_records(
    session: Session, records: list[tuple[int, Any]], source_file: str
) -> ImportReport:
    """Store the findings of (line, record) pairs; a line that does not validate is reported
    with its line number and costs only itself."""
    report = ImportReport(rejected=[])
    by_task: dict[tuple[str, str], list[dict[str, str]]] = {}
    for line, record in records:
        try:
            if not is_findings_record(record):
                raise FindingError("not a findings record (task_id and findings expected)")
            items = record["findings"] if "findings" in record else [record]
            parsed = [FindingModel.model_validate(i).model_dump() for i in items]
        except (ValidationError, FindingError, TypeError) as exc:
            assert report.rejected is not None
            report.rejected.append((line, _reason(exc)))
            continue
        key = (record["task_id"], str(record.get("model") or "imported"))
        by_task.setdefault(key, []).extend(parsed)
    for (task_id, model), found in by_task.items():
        d = Diagnosis(task_id=task_id, model=model, prompt_hash="", prompt_version="",
                      findings=found)  # fmt: skip
        save_diagnosis(session, d, source=f"import:{source_file}")
        report.runs += 1
        report.findings += len(found)
    return report


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return f"finding {'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
    return str(exc)
