"""The store (SQLModel over SQLite or PostgreSQL): persistence only.

`models` is the schema, `db` the engine and sessions, `calls` writes and reads calls with their
content-addressed messages and blobs, `queries` the read-only frames the pages show, `rewards`
an attempt's reward, and `decisions` the per-settings cache of what `clawviz.recon.pipeline`
decides (`clawviz.jobs.analyse` keeps it up to date).

The public names below (`__all__`) are imported from their module on first use
(`clawviz._lazy`); callers outside the stage import them from `clawviz.store`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clawviz._lazy import lazy_api

if TYPE_CHECKING:
    from clawviz.store.comments import CommentError, add_comment, comment_counts, comments_by_call
    from clawviz.store.db import get_engine, require_writable, session_scope
    from clawviz.store.decisions import (
        Group,
        Stale,
        group_statuses,
        load_order,
        persist_analyses,
        read_analysis,
        replace_unattached,
        stale_episodes,
        store_advantages,
        unattached_stale,
    )
    from clawviz.store.models import (
        Blob,
        CallRow,
        DiagnosisRun,
        Episode,
        EpisodeStatus,
        Finding,
        MessageRow,
        Result,
        Review,
        SolvabilityRun,
        Source,
        Task,
        restore_nul,
        utcnow,
    )
    from clawviz.store.queries import (
        PAPER_STATS,
        STAT_LABELS,
        EpisodeFilter,
        EpisodeRow,
        listing_chunks,
    )
    from clawviz.store.rewards import result_reward, reward_from_columns

__all__ = [
    "Blob",
    "CallRow",
    "CommentError",
    "DiagnosisRun",
    "Episode",
    "EpisodeFilter",
    "EpisodeRow",
    "EpisodeStatus",
    "Finding",
    "Group",
    "MessageRow",
    "PAPER_STATS",
    "Result",
    "Review",
    "STAT_LABELS",
    "SolvabilityRun",
    "Source",
    "Stale",
    "Task",
    "add_comment",
    "comment_counts",
    "comments_by_call",
    "get_engine",
    "group_statuses",
    "listing_chunks",
    "load_order",
    "persist_analyses",
    "read_analysis",
    "replace_unattached",
    "require_writable",
    "restore_nul",
    "result_reward",
    "reward_from_columns",
    "session_scope",
    "stale_episodes",
    "store_advantages",
    "unattached_stale",
    "utcnow",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "comments": ("CommentError", "add_comment", "comment_counts", "comments_by_call"),
    "db": ("get_engine", "require_writable", "session_scope"),
    "decisions": (
        "Group",
        "Stale",
        "group_statuses",
        "load_order",
        "persist_analyses",
        "read_analysis",
        "replace_unattached",
        "stale_episodes",
        "store_advantages",
        "unattached_stale",
    ),
    "models": (
        "Blob",
        "CallRow",
        "DiagnosisRun",
        "Episode",
        "EpisodeStatus",
        "Finding",
        "MessageRow",
        "Result",
        "Review",
        "SolvabilityRun",
        "Source",
        "Task",
        "restore_nul",
        "utcnow",
    ),
    "queries": ("EpisodeFilter", "EpisodeRow", "PAPER_STATS", "STAT_LABELS", "listing_chunks"),
    "rewards": ("result_reward", "reward_from_columns"),
}
"""Which module holds each public name."""

__getattr__, __dir__ = lazy_api(__name__, _HOMES)
