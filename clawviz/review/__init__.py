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
    from clawviz.review.signoff import DECISIONS, ReviewError, add_review, export_reviews
    from clawviz.review.tasks import (
        AttemptWorkspaces,
        CheckMatrix,
        TaskDetail,
        TaskRow,
        attempt_workspaces,
        attempts_with_workspaces,
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
    "AttemptWorkspaces",
    "CheckMatrix",
    "CheckerError",
    "CheckerResult",
    "DECISIONS",
    "FileDiff",
    "ReviewError",
    "STATUSES",
    "STATUS_MARKER",
    "TaskDetail",
    "TaskRow",
    "WorkspaceDiff",
    "add_review",
    "attempt_workspaces",
    "attempts_with_workspaces",
    "csv_rows",
    "diff_workspaces",
    "export_reviews",
    "extract_archive",
    "file_diff",
    "highlight_lexer_name",
    "is_archive",
    "is_binary_bytes",
    "is_csv",
    "open_workspace",
    "read_task_file",
    "run_checker",
    "run_checker_on_archive_bytes",
    "task_detail",
    "task_queue",
    "tree_rows",
    "verdict_label",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "archive": ("ArchiveError", "extract_archive", "is_archive", "open_workspace"),
    "checker": ("CheckerError", "CheckerResult", "run_checker", "run_checker_on_archive_bytes"),
    "signoff": ("DECISIONS", "ReviewError", "add_review", "export_reviews"),
    "tasks": (
        "AttemptWorkspaces",
        "CheckMatrix",
        "TaskDetail",
        "TaskRow",
        "attempt_workspaces",
        "attempts_with_workspaces",
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

__getattr__, __dir__ = lazy_api(__name__, _HOMES)
