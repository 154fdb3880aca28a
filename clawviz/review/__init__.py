"""Task curation: benchmark tasks, checkers, workspaces and sign-off (PIPELINE §7).

`tasks` (task folders, the review queue, the difficulty filter), `checker` (runs a task's
checker on a workspace, in `sandbox`), `workspace` (before/after diff), `archive` (safe
extraction), `signoff` (the append-only review history), `diagnosis` and `findings` (LLM-assisted
review), `solvability` (the reference workspace).

The public names below (`__all__`) are imported from their module on first use
(`clawviz._lazy`); callers outside the stage import them from `clawviz.review`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clawviz._lazy import lazy_api

if TYPE_CHECKING:
    from clawviz.review.archive import ArchiveError, extract_archive, is_archive, open_workspace
    from clawviz.review.checker import (
        CheckerError,
        CheckerResult,
        run_checker,
        run_checker_on_archive_bytes,
    )
    from clawviz.review.diagnosis import Diagnosis, DiagnosisError, Endpoint, diagnose_tasks
    from clawviz.review.findings import (
        import_records,
        judge,
        list_findings,
        runs_of,
        save_diagnosis,
    )
    from clawviz.review.signoff import DECISIONS, ReviewError, add_review, export_reviews
    from clawviz.review.solvability import check_reference, reference_workspace, solvable_status
    from clawviz.review.solvability import record as record_solvability
    from clawviz.review.tasks import (
        AttemptSummary,
        AttemptWorkspaces,
        CheckMatrix,
        TaskDetail,
        TaskRow,
        attempt_has_workspace,
        attempt_summary,
        attempt_workspaces,
        attempts_with_workspaces,
        is_task_folder,
        load_task_folder,
        read_task_file,
        task_detail,
        task_queue,
        verdict_label,
    )
    from clawviz.review.workspace import (
        STATUS_MARKER,
        STATUSES,
        FileDiff,
        WorkspaceDiff,
        csv_rows,
        diff_workspaces,
        file_diff,
        highlight_lexer_name,
        is_binary_bytes,
        is_csv,
        tree_rows,
    )

__all__ = [
    "ArchiveError",
    "AttemptSummary",
    "AttemptWorkspaces",
    "CheckMatrix",
    "CheckerError",
    "CheckerResult",
    "DECISIONS",
    "Diagnosis",
    "DiagnosisError",
    "Endpoint",
    "FileDiff",
    "ReviewError",
    "STATUSES",
    "STATUS_MARKER",
    "TaskDetail",
    "TaskRow",
    "WorkspaceDiff",
    "add_review",
    "attempt_summary",
    "attempt_workspaces",
    "attempt_has_workspace",
    "attempts_with_workspaces",
    "check_reference",
    "csv_rows",
    "diagnose_tasks",
    "diff_workspaces",
    "export_reviews",
    "extract_archive",
    "file_diff",
    "highlight_lexer_name",
    "import_records",
    "is_archive",
    "is_binary_bytes",
    "is_csv",
    "is_task_folder",
    "judge",
    "list_findings",
    "load_task_folder",
    "open_workspace",
    "read_task_file",
    "record_solvability",
    "reference_workspace",
    "run_checker",
    "run_checker_on_archive_bytes",
    "runs_of",
    "save_diagnosis",
    "solvable_status",
    "task_detail",
    "task_queue",
    "tree_rows",
    "verdict_label",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "archive": ("ArchiveError", "extract_archive", "is_archive", "open_workspace"),
    "checker": ("CheckerError", "CheckerResult", "run_checker", "run_checker_on_archive_bytes"),
    "diagnosis": ("Diagnosis", "DiagnosisError", "Endpoint", "diagnose_tasks"),
    "findings": ("import_records", "judge", "list_findings", "runs_of", "save_diagnosis"),
    "signoff": ("DECISIONS", "ReviewError", "add_review", "export_reviews"),
    "solvability": ("check_reference", "reference_workspace", "solvable_status"),
    "tasks": (
        "AttemptSummary",
        "AttemptWorkspaces",
        "CheckMatrix",
        "TaskDetail",
        "TaskRow",
        "attempt_summary",
        "attempt_workspaces",
        "attempt_has_workspace",
        "attempts_with_workspaces",
        "is_task_folder",
        "load_task_folder",
        "read_task_file",
        "task_detail",
        "task_queue",
        "verdict_label",
    ),
    "workspace": (
        "FileDiff",
        "STATUSES",
        "STATUS_MARKER",
        "WorkspaceDiff",
        "csv_rows",
        "diff_workspaces",
        "file_diff",
        "highlight_lexer_name",
        "is_binary_bytes",
        "is_csv",
        "tree_rows",
    ),
}
"""Which module holds each public name."""

_RENAMED: dict[str, tuple[str, str]] = {
    "record_solvability": ("solvability", "record"),
}
"""Public names published under another name than their module's (clashes, clarity)."""

__getattr__, __dir__ = lazy_api(__name__, _HOMES, _RENAMED)
