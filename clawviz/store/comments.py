"""Comments on calls: a reviewer's note on one call, with the reviewer and the time
(append-only, like sign-offs). The text is untrusted: every view shows it as text."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from clawviz.store import models

MAX_TEXT = 10_000
"""Characters of one comment; a longer one is refused (a note, not a log)."""
MAX_REVIEWER = 200
CHUNK = 500
"""Episode ids per IN (...) list of `comment_counts` (bounded statements on both backends)."""


class CommentError(ValueError):
    """A comment that cannot be stored; the message says why."""


def _clean_reviewer(reviewer: str | None) -> str:
    name = (reviewer or "").strip()
    if not name:
        raise CommentError("a reviewer name is required")
    if len(name) > MAX_REVIEWER:
        raise CommentError(f"a reviewer name has at most {MAX_REVIEWER} characters")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise CommentError("a reviewer name cannot hold control characters")
    return name


def add_comment(
    session: Session, episode_id: str, call_id: str, reviewer: str | None, text: str | None
) -> models.CallComment:
    """Store one comment on `call_id` of `episode_id` (the call must be in that episode)."""
    name = _clean_reviewer(reviewer)
    body = (text or "").strip()
    if not body:
        raise CommentError("a comment needs some text")
    if len(body) > MAX_TEXT:
        raise CommentError(f"a comment has at most {MAX_TEXT:,} characters, not {len(body):,}")
    call = session.get(models.CallRow, call_id)
    if call is None or call.episode_id != episode_id:
        raise CommentError(f"no call {call_id!r} in episode {episode_id!r}")
    row = models.CallComment(
        episode_id=episode_id,
        call_id=call_id,
        reviewer=name,
        text=body,
        created_at=datetime.now(UTC),
    )
    session.add(row)
    session.commit()
    session.refresh(row)
    return row


def comments_for_episode(session: Session, episode_id: str) -> list[models.CallComment]:
    """The episode's comments, oldest first."""
    stmt = (
        select(models.CallComment)
        .where(models.CallComment.episode_id == episode_id)
        .order_by(col(models.CallComment.created_at), col(models.CallComment.id))
    )
    return list(session.exec(stmt))


def comment_counts(session: Session, episode_ids: Iterable[str]) -> dict[str, int]:
    """How many comments each of `episode_ids` has (episodes with none are left out)."""
    ids = list(dict.fromkeys(episode_ids))
    out: dict[str, int] = {}
    for i in range(0, len(ids), CHUNK):
        part = ids[i : i + CHUNK]
        stmt = (
            select(models.CallComment.episode_id, func.count())
            .where(col(models.CallComment.episode_id).in_(part))
            .group_by(col(models.CallComment.episode_id))
        )
        for episode_id, n in session.exec(stmt):
            out[episode_id] = int(n)
    return out


def as_dict(c: models.CallComment) -> dict[str, Any]:
    """A comment as JSON-ready data (the explorer payload, `explain --json`)."""
    created = c.created_at if c.created_at.tzinfo else c.created_at.replace(tzinfo=UTC)
    return {
        "id": c.id,
        "call_id": c.call_id,
        "reviewer": c.reviewer,
        "text": c.text,
        "created_at": created.isoformat(timespec="seconds"),
    }


def comments_by_call(session: Session, episode_id: str) -> dict[str, list[dict[str, Any]]]:
    """The episode's comments grouped by call, oldest first, as data."""
    out: dict[str, list[dict[str, Any]]] = {}
    for c in comments_for_episode(session, episode_id):
        out.setdefault(c.call_id, []).append(as_dict(c))
    return out
