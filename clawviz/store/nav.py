"""Moving between episodes without loading the list: bounded queries for the Episode page's
switcher (issue 26 §3). `neighbours` finds the previous and next episode in the Runs table's
default order (`store.queries._EPISODE_ORDER_SQL`: task, harness, attempt, id; missing values
last) with one keyset query each; `search_episodes` finds episodes by id prefix or task, at most
`limit` of them, in that order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, literal, select, tuple_
from sqlmodel import Session, col

from clawviz.store.models import Episode

MAX_RESULTS = 50
"""The most episodes one search returns, whatever limit is asked for."""


@dataclass(frozen=True)
class Position:
    """Where an episode stands in the Runs order: its neighbours, its 1-based index, the total."""

    previous: str | None
    next: str | None
    index: int
    total: int


def _key_columns() -> list[Any]:
    """The Runs order as comparable columns: (missing?, value) per field, then the id. NULLs
    sort last as in `_EPISODE_ORDER_SQL`, and COALESCE makes them comparable (all equal)."""
    out: list[Any] = []
    for c, empty in (
        (col(Episode.task_id), literal("")),
        (col(Episode.harness), literal("")),
        (col(Episode.attempt), literal(0)),
    ):
        out.append(case((c.is_(None), 1), else_=0))
        out.append(func.coalesce(c, empty))
    out.append(col(Episode.episode_id))
    return out


def _key_of(session: Session, episode_id: str) -> tuple[Any, ...] | None:
    row = session.execute(
        select(*_key_columns()).where(col(Episode.episode_id) == episode_id)
    ).first()
    return tuple(row) if row is not None else None


# What Runs lists: a transcript linked to its session's wire episode (jobs.sessions) is that
# episode's cross-check, not an episode of its own, so Previous/Next and the count skip it (a
# link or the find box still opens it).
_LISTED = col(Episode.primary_episode).is_(None)


def neighbours(session: Session, episode_id: str) -> Position | None:
    """The previous and next episode of `episode_id` in the Runs default order, its place and
    the number of episodes Runs lists (None: no such episode). Bounded queries, no list
    loaded."""
    key = _key_of(session, episode_id)
    if key is None:
        return None
    cols = _key_columns()
    here = tuple_(*cols)
    there = tuple_(*[literal(v) for v in key])
    listed = _LISTED
    nxt = session.execute(
        select(col(Episode.episode_id)).where(listed, here > there).order_by(*cols).limit(1)
    ).scalar()
    prev = session.execute(
        select(col(Episode.episode_id))
        .where(listed, here < there)
        .order_by(*[c.desc() for c in cols])
        .limit(1)
    ).scalar()
    before = session.execute(
        select(func.count()).select_from(Episode).where(listed, here < there)
    )
    total = session.execute(select(func.count()).select_from(Episode).where(listed))
    return Position(prev, nxt, int(before.scalar() or 0) + 1, int(total.scalar() or 0))


def _like_prefix(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def search_episodes(session: Session, text: str, limit: int = 10) -> list[str]:
    """Episode ids that start with `text` or whose task starts with it (case-insensitive), in
    the Runs order, at most `limit` (and never more than MAX_RESULTS)."""
    text = text.strip()
    if not text:
        return []
    pattern = _like_prefix(text.lower())
    stmt = (
        select(col(Episode.episode_id))
        .where(
            func.lower(col(Episode.episode_id)).like(pattern, escape="\\")
            | func.lower(col(Episode.task_id)).like(pattern, escape="\\")
        )
        .order_by(*_key_columns())
        .limit(max(1, min(limit, MAX_RESULTS)))
    )
    return [str(r) for r in session.execute(stmt).scalars()]


def episode_count(session: Session) -> int:
    """How many episodes Runs lists (one COUNT, no rows; linked transcripts left out)."""
    stmt = select(func.count()).select_from(Episode).where(_LISTED)
    return int(session.execute(stmt).scalar() or 0)
