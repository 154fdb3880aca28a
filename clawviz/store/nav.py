"""Moving between episodes without loading the list: bounded queries for the Episode page's
switcher (issue 26 §3). `neighbours` finds the previous and next episode in the Runs table's
default order (`store.queries._EPISODE_ORDER_SQL`: task, harness, attempt, id; missing values
last) with one keyset query each; `search_episodes` finds episodes by id prefix or task, at most
`limit` of them, in that order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, literal, select, text
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


_LEVELS = (
    ("(task_id IS NULL)", None), ("task_id", 0), ("(harness IS NULL)", None), ("harness", 2),
    ("(attempt IS NULL)", None), ("attempt", 4), ("episode_id", None),
)  # fmt: skip
"""The Runs order as the terms of `models.RUNS_ORDER_INDEX` (each value column names its
missing-flag level: where that flag is 1 the value is NULL, equal for every such row)."""
_ORDER = ", ".join(term for term, _ in _LEVELS)
_LISTED_SQL = "primary_episode IS NULL"


def _key(session: Session, episode_id: str) -> tuple[Any, ...] | None:
    row = (
        session.connection()
        .execute(
            text(f"SELECT {_ORDER} FROM episode WHERE episode_id = :e"),
            {"e": episode_id},  # noqa: S608
        )
        .first()
    )
    return tuple(row) if row is not None else None


def _beyond(key: tuple[Any, ...], level: int, op: str) -> tuple[str, dict[str, Any]] | None:
    """Rows equal to `key` on the levels before `level` and `op` (< or >) it at `level`, as a
    WHERE clause the Runs-order index serves (an equality prefix, one range); None when no row
    can be (a missing value has nothing past it at its own level)."""
    conds, params = [_LISTED_SQL], {}
    for i, (term, flag) in enumerate(_LEVELS[: level + 1]):
        if flag is not None and key[flag]:  # the value is NULL here: equal for every such row
            if i == level:
                return None
            continue
        params[f"k{i}"] = key[i]
        conds.append(f"{term} {'=' if i < level else op} :k{i}")
    return " AND ".join(conds), params


def _next(session: Session, key: tuple[Any, ...], op: str) -> str | None:
    """The first episode past `key` in the Runs order (`op` '>') or before it ('<'): one
    index range read per level, the deepest level first (the nearest rows)."""
    direction = "" if op == ">" else " DESC"
    for level in range(len(_LEVELS) - 1, -1, -1):
        where = _beyond(key, level, op)
        if where is None:
            continue
        # Only the levels from this one: the equal ones before it would make SQLite sort.
        order = ", ".join(term + direction for term, _ in _LEVELS[level:])
        row = (
            session.connection()
            .execute(
                text(f"SELECT episode_id FROM episode WHERE {where[0]} ORDER BY {order} LIMIT 1"),  # noqa: S608
                where[1],
            )
            .first()
        )
        if row is not None:
            return str(row[0])
    return None


def _before(session: Session, key: tuple[Any, ...]) -> int:
    """How many listed episodes come before `key` (a count of index ranges)."""
    n = 0
    for level in range(len(_LEVELS)):
        where = _beyond(key, level, "<")
        if where is not None:
            n += int(
                session.connection()
                .execute(text(f"SELECT COUNT(*) FROM episode WHERE {where[0]}"), where[1])  # noqa: S608
                .scalar_one()
            )
    return n


def neighbours(session: Session, episode_id: str) -> Position | None:
    """The previous and next episode of `episode_id` in the Runs default order, its place and
    the number of episodes Runs lists (None: no such episode). Bounded queries on the Runs-order
    index (`models.RUNS_ORDER_INDEX`), no list loaded."""
    key = _key(session, episode_id)
    if key is None:
        return None
    return Position(
        _next(session, key, "<"), _next(session, key, ">"), _before(session, key) + 1,
        episode_count(session),
    )  # fmt: skip


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


def has_episodes(session: Session) -> bool:
    """Whether Runs lists any episode: one row at most (the empty-store check of a page)."""
    stmt = select(col(Episode.episode_id)).where(_LISTED).limit(1)
    return session.execute(stmt).first() is not None


def episode_count(session: Session) -> int:
    """How many episodes Runs lists (one COUNT, no rows; linked transcripts left out)."""
    stmt = select(func.count()).select_from(Episode).where(_LISTED)
    return int(session.execute(stmt).scalar() or 0)
