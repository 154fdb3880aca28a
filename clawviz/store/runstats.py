"""The Runs page's first-view aggregates, kept up to date instead of recomputed (issue 26 §3).

The unfiltered Runs view shows counts per status and reason, the episodes and calls, the reward
bins per harness, the GRPO groups and the filter options. Computed in SQL they cost a pass over
every episode on each first view. Here they are counts in `runs_agg`, one row per (settings
hash, kind, key), and `runs_member` records what each episode added, so that when an episode
changes its old contribution is subtracted and its new one added (`refresh`).

Who calls `refresh`: `clawviz.store.decisions` whenever it stores statuses (`persist_analyses`),
advantages (`store_advantages`) or dequeues episodes found unchanged (`_dequeue`), in the same
transaction. Every change of an input (an episode inserted or given calls, linked to its wire
episode, renamed, a result) is queued by the change-queue triggers (`clawviz.store.changes`), so
for a settings hash whose queue is empty every change has passed through `refresh`: that is when
the counts are used (`read`). Otherwise (something queued and not yet analysed, a read-only store,
a hash never built) the page computes in SQL as before. `rebuild` recomputes a hash from scratch
(bench stores copied row by row, upgrades, a first view under new settings).

A contribution is computed from the stored rows (episode, its status under the hash, its result)
by `contribution`, the same rule for `refresh` and `rebuild`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import text
from sqlmodel import Session

from clawviz.store.models import reason_codes

AGG = "runs_agg"
MEMBER = "runs_member"
MARK = "runs_mark"
NOT_ANALYSED = "not analysed"
REWARD_BINS = 20
"""As `queries.REWARD_BINS` (bins of width 0.05 over [0, 1], 1.0 in the last)."""

ADVISORY_LOCK = 0x72756E73
"""PostgreSQL transaction lock taken by `refresh` (the count rows are shared by every writer)."""

Key = tuple[str, str]
"""(kind, key) of one `runs_agg` row."""

_ROWS_SQL = """
    SELECT e.episode_id, e.task_id, e.harness, e.model, e.n_calls, e.primary_episode,
           s.status, s.reasons_json, COALESCE(s.reward, r.reward), s.advantage
    FROM episode e
    LEFT JOIN episode_status s ON s.episode_id = e.episode_id AND s.settings_hash = :h
    LEFT JOIN result r ON r.episode_id = e.episode_id
"""


def reward_bin(reward: float) -> int:
    """The bin of a reward, as the Runs SQL makes it (truncated x 20, clipped to 0..19)."""
    return min(max(int(reward * REWARD_BINS), 0), REWARD_BINS - 1)


def group_name(task: str | None, harness: str | None) -> str:
    return f"{task if task is not None else '?'} / {harness if harness is not None else '?'}"


def contribution(row: Any) -> tuple[list[Key], int, dict[Key, str]]:
    """What one row of `_ROWS_SQL` adds: its (kind, key) pairs, its calls, and the detail of
    its group key. A transcript linked to its wire episode adds nothing (Runs leaves it out)."""
    _eid, task, harness, model, n_calls, primary, status, reasons_json, reward, adv = row
    if primary is not None:
        return [], 0, {}
    keys: list[Key] = [("all", ""), ("status", str(status) if status else NOT_ANALYSED)]
    keys += [("reason", c) for c in reason_codes(reasons_json)]
    if reward is not None:
        keys.append(("rewarded", ""))
        keys.append(("bin", orjson.dumps([harness or "?", reward_bin(float(reward))]).decode()))
    keys += [(kind, str(v)) for kind, v in (("task", task), ("harness", harness), ("model", model))
             if v is not None]  # fmt: skip
    detail: dict[Key, str] = {}
    if adv is not None:
        g = ("group", group_name(task, harness))
        keys.append(g)
        detail[g] = orjson.dumps([task, harness]).decode()
    return keys, int(n_calls or 0), detail


def _chunks(items: list[str], n: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def _in(ids: list[str], prefix: str = "i") -> tuple[str, dict[str, str]]:
    return ", ".join(f":{prefix}{j}" for j in range(len(ids))), {
        f"{prefix}{j}": v for j, v in enumerate(ids)
    }


def maintained(session: Session) -> list[str]:
    """The settings hashes whose aggregates are kept (`runs_mark`)."""
    rows = session.connection().execute(text(f"SELECT settings_hash FROM {MARK}"))  # noqa: S608
    return [str(r[0]) for r in rows]


_UPSERT = (
    f"INSERT INTO {AGG} (settings_hash, kind, key, n, calls, detail) "
    "VALUES (:h, :k, :v, :n, :c, :d) ON CONFLICT (settings_hash, kind, key) DO UPDATE SET "
    f"n = {AGG}.n + excluded.n, calls = {AGG}.calls + excluded.calls, "
    f"detail = COALESCE(excluded.detail, {AGG}.detail)"
)
_DROP_EMPTY = f"DELETE FROM {AGG} WHERE settings_hash = :h AND kind = :k AND key = :v AND n <= 0"


def refresh(
    session: Session, episode_ids: Iterable[str], hashes: Iterable[str] | None = None
) -> None:
    """Bring the aggregates of these episodes up to date under every maintained hash (or
    `hashes`, where maintained): subtract what each added before, add what it adds now. In the
    caller's transaction."""
    ids = sorted(set(episode_ids))
    kept = maintained(session)
    todo = [h for h in kept if hashes is None or h in set(hashes)]
    if not ids or not todo:
        return
    conn = session.connection()
    if session.get_bind().dialect.name == "postgresql":
        # Concurrent writers add to the same count rows ('all', each status): one at a time
        # from here to their commit, so two transactions never wait on each other's rows.
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": ADVISORY_LOCK})
    for h in todo:
        delta: Counter[Key] = Counter()
        calls: Counter[Key] = Counter()
        detail: dict[Key, str] = {}
        members: list[dict[str, Any]] = []
        for chunk in _chunks(ids):
            marks, params = _in(chunk)
            old = conn.execute(
                text(f"SELECT keys_json, calls FROM {MEMBER} WHERE settings_hash = :h "  # noqa: S608
                     f"AND episode_id IN ({marks})"),
                {"h": h, **params},
            )  # fmt: skip
            for keys_json, n_calls in old:
                for kind, key in orjson.loads(keys_json):
                    delta[(kind, key)] -= 1
                    calls[(kind, key)] -= int(n_calls or 0)
            conn.execute(
                text(f"DELETE FROM {MEMBER} WHERE settings_hash = :h AND episode_id IN ({marks})"),  # noqa: S608
                {"h": h, **params},
            )
            rows = conn.execute(
                text(f"{_ROWS_SQL} WHERE e.episode_id IN ({marks})"),
                {"h": h, **params},  # noqa: S608
            )
            for row in rows:
                keys, n_calls, d = contribution(row)
                if not keys:
                    continue
                detail.update(d)
                for k in keys:
                    delta[k] += 1
                    calls[k] += n_calls
                members.append(
                    {"h": h, "e": row[0], "j": orjson.dumps(keys).decode(), "c": n_calls}
                )
        _apply(session, h, delta, calls, detail)
        if members:
            conn.execute(
                text(f"INSERT INTO {MEMBER} (settings_hash, episode_id, keys_json, calls) "
                     "VALUES (:h, :e, :j, :c)"),
                members,
            )  # fmt: skip


def _apply(
    session: Session, h: str, delta: Counter[Key], calls: Counter[Key], detail: dict[Key, str]
) -> None:
    """Add the deltas to `runs_agg` in key order (concurrent writers lock rows in one order)."""
    keys = sorted(k for k in set(delta) | set(calls) if delta[k] or calls[k])
    if not keys:
        return
    conn = session.connection()
    conn.execute(
        text(_UPSERT),
        [
            {"h": h, "k": k[0], "v": k[1], "n": delta[k], "c": calls[k], "d": detail.get(k)}
            for k in keys
        ],
    )
    gone = [{"h": h, "k": k[0], "v": k[1]} for k in keys if delta[k] < 0]
    if gone:
        conn.execute(text(_DROP_EMPTY), gone)


def rebuild(session: Session, settings_hash: str) -> None:
    """Recompute the aggregates of one settings hash from the stored rows and keep them from
    now on (`runs_mark`). In the caller's transaction; one pass over every episode."""
    h = settings_hash
    conn = session.connection()
    if session.get_bind().dialect.name == "postgresql":
        # Writers of statuses in flight finish first, and wait for this (their `refresh`
        # then sees the mark): nothing is counted twice or missed.
        conn.execute(text("LOCK TABLE episode_status IN SHARE MODE"))
    for table in (AGG, MEMBER, MARK):
        conn.execute(text(f"DELETE FROM {table} WHERE settings_hash = :h"), {"h": h})  # noqa: S608
    conn.execute(text(f"INSERT INTO {MARK} (settings_hash) VALUES (:h)"), {"h": h})
    delta: Counter[Key] = Counter()
    calls: Counter[Key] = Counter()
    detail: dict[Key, str] = {}
    members: list[dict[str, Any]] = []
    # Streamed (a server-side cursor on PostgreSQL), on this statement only.
    query = text(_ROWS_SQL).execution_options(stream_results=True, yield_per=5000)
    rows = conn.execute(query, {"h": h})
    for part in rows.partitions(5000):
        for row in part:
            keys, n_calls, d = contribution(row)
            if not keys:
                continue
            detail.update(d)
            for k in keys:
                delta[k] += 1
                calls[k] += n_calls
            members.append({"h": h, "e": row[0], "j": orjson.dumps(keys).decode(), "c": n_calls})
    for i in range(0, len(members), 5000):
        conn.execute(
            text(f"INSERT INTO {MEMBER} (settings_hash, episode_id, keys_json, calls) "
                 "VALUES (:h, :e, :j, :c)"),
            members[i : i + 5000],
        )  # fmt: skip
    _apply(session, h, delta, calls, detail)


def forget(session: Session, settings_hash: str) -> None:
    """Stop keeping a hash (its counts go): the page computes in SQL until a `rebuild`."""
    conn = session.connection()
    for table in (AGG, MEMBER, MARK):
        conn.execute(text(f"DELETE FROM {table} WHERE settings_hash = :h"), {"h": settings_hash})  # noqa: S608


def _state(session: Session, settings_hash: str) -> tuple[bool, bool, bool]:
    """(kept, registered, queued) of a hash: in `runs_mark`, in `analysis_mark` (its analysis
    follows the change queue), and something in its queue. Three primary-key reads."""
    row = (
        session.connection()
        .execute(
            text(
                f"SELECT (SELECT COUNT(*) FROM {MARK} WHERE settings_hash = :h), "  # noqa: S608
                "(SELECT COUNT(*) FROM analysis_mark WHERE settings_hash = :h), "
                "(SELECT COUNT(*) FROM (SELECT 1 FROM episode_dirty WHERE settings_hash = :h "
                "LIMIT 1) q)"
            ),
            {"h": settings_hash},
        )
        .one()
    )
    return bool(row[0]), bool(row[1]), bool(row[2])


def usable(session: Session, settings_hash: str) -> bool:
    """Whether the kept counts of this hash are the store's: it is kept, its analysis follows
    the change queue, and nothing is queued for it (every change of an input has been through
    `refresh`)."""
    kept, registered, queued = _state(session, settings_hash)
    return kept and registered and not queued


def ensure(session: Session, settings_hash: str) -> bool:
    """`usable`, building the counts first when the hash is quiescent but not kept yet (a first
    view under new settings, an upgraded store); False when they cannot be used (something is
    queued, or the store is read-only), so the caller computes in SQL."""
    kept, registered, queued = _state(session, settings_hash)
    if not registered or queued:
        return False
    if kept:
        return True
    try:
        rebuild(session, settings_hash)
        session.commit()
        return True
    except Exception:  # noqa: BLE001 - a read-only store: computed in SQL
        session.rollback()
        return False


@dataclass(frozen=True)
class Counts:
    """The kept counts of the unfiltered Runs view under one settings hash."""

    episodes: int
    calls: int
    with_reward: int
    statuses: dict[str, int]
    reasons: dict[str, int]
    tasks: int


def counts(session: Session, settings_hash: str) -> Counts:
    """The totals, statuses, reasons and number of tasks (index range reads of `runs_agg`)."""
    conn = session.connection()
    rows = conn.execute(
        text(
            f"SELECT kind, key, n, calls FROM {AGG} WHERE settings_hash = :h "  # noqa: S608
            "AND kind IN ('all', 'rewarded', 'status', 'reason') AND n > 0"
        ),
        {"h": settings_hash},
    ).all()
    tasks = conn.execute(
        text(f"SELECT COUNT(*) FROM {AGG} WHERE settings_hash = :h AND kind = 'task' AND n > 0"),  # noqa: S608
        {"h": settings_hash},
    ).scalar_one()
    total = {str(k): (int(n), int(c)) for kind, k, n, c in rows if kind == "all"}.get("", (0, 0))
    rewarded = sum(int(n) for kind, _k, n, _c in rows if kind == "rewarded")
    return Counts(
        episodes=total[0],
        calls=total[1],
        with_reward=rewarded,
        statuses={str(k): int(n) for kind, k, n, _c in rows if kind == "status"},
        reasons={str(k): int(n) for kind, k, n, _c in rows if kind == "reason"},
        tasks=int(tasks or 0),
    )


def values(session: Session, settings_hash: str, kind: str) -> list[str]:
    """The keys of one kind with episodes (e.g. the tasks, harnesses, models, statuses)."""
    rows = session.connection().execute(
        text(f"SELECT key FROM {AGG} WHERE settings_hash = :h AND kind = :k AND n > 0"),  # noqa: S608
        {"h": settings_hash, "k": kind},
    )
    return sorted(str(r[0]) for r in rows)


def bins(session: Session, settings_hash: str) -> list[tuple[str, int, int]]:
    """(harness, bin, episodes) of the episodes with a reward, sorted."""
    rows = session.connection().execute(
        text(f"SELECT key, n FROM {AGG} WHERE settings_hash = :h AND kind = 'bin' AND n > 0"),  # noqa: S608
        {"h": settings_hash},
    )
    out = []
    for key, n in rows:
        harness, b = orjson.loads(key)
        out.append((str(harness), int(b), int(n)))
    return sorted(out)


def groups(
    session: Session, settings_hash: str, first: int
) -> tuple[list[tuple[str, str | None, str | None]], int]:
    """The first `first` GRPO groups with an advantage by name, as (name, task, harness), and
    how many there are."""
    conn = session.connection()
    h = {"h": settings_hash}
    n = conn.execute(
        text(f"SELECT COUNT(*) FROM {AGG} WHERE settings_hash = :h AND kind = 'group' AND n > 0"),  # noqa: S608
        h,
    ).scalar_one()
    collate = ' COLLATE "C"' if session.get_bind().dialect.name == "postgresql" else ""
    rows = conn.execute(
        text(
            f"SELECT key, detail FROM {AGG} WHERE settings_hash = :h AND kind = 'group' "  # noqa: S608
            f"AND n > 0 ORDER BY key{collate} LIMIT :n"
        ),
        {**h, "n": first},
    )
    out = []
    for name, d in rows:
        task, harness = orjson.loads(d) if d else (None, None)
        out.append((str(name), task, harness))
    out.sort(key=lambda g: g[0])
    return out, int(n or 0)


def recomputed(session: Session, settings_hash: str) -> dict[Key, tuple[int, int]]:
    """Every (kind, key) -> (episodes, calls) computed from scratch (tests, `check`)."""
    delta: Counter[Key] = Counter()
    calls: Counter[Key] = Counter()
    for row in session.connection().execute(text(_ROWS_SQL), {"h": settings_hash}):
        keys, n_calls, _d = contribution(row)
        for k in keys:
            delta[k] += 1
            calls[k] += n_calls
    return {k: (delta[k], calls[k]) for k in delta}


def stored(session: Session, settings_hash: str) -> dict[Key, tuple[int, int]]:
    """Every kept (kind, key) -> (episodes, calls) with episodes."""
    rows = session.connection().execute(
        text(f"SELECT kind, key, n, calls FROM {AGG} WHERE settings_hash = :h AND n <> 0"),  # noqa: S608
        {"h": settings_hash},
    )
    return {(str(k), str(v)): (int(n), int(c)) for k, v, n, c in rows}
