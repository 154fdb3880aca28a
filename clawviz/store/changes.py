"""The change queue behind the staleness check: which episodes changed since they were analysed.

Database triggers (both backends) add a row to `episode_dirty` for every settings hash listed
in `analysis_mark` whenever an episode is inserted, renamed, or its inputs change (`n_calls`,
`last_ts`: new calls), or its result is inserted or updated, whatever process writes (ingest,
the recorder's follower, a bench copy). `clawviz.store.decisions.stale_episodes` then reads only
those rows for a registered hash, never a scan of every episode: O(episodes changed since the last
analysis). A hash that is not registered yet (new settings, an ANALYSIS_VERSION bump, a store
made before the queue) takes the full check once and is registered first.

Each queue row carries a `seq` that every new change replaces, and the analysis deletes a row
only with the `seq` it read: a change committed while an analysis runs keeps its row.
"""

from __future__ import annotations

from typing import Any

QUEUE = "episode_dirty"
MARKS = "analysis_mark"

_SQLITE_INSERT = f"""
  INSERT INTO {QUEUE} (settings_hash, episode_id, seq)
  SELECT settings_hash, NEW.episode_id,
         (SELECT COALESCE(MAX(seq), 0) + 1 FROM {QUEUE})
  FROM {MARKS} WHERE 1
  ON CONFLICT (settings_hash, episode_id) DO UPDATE SET seq = excluded.seq;
"""

SQLITE_TRIGGERS: tuple[str, ...] = (
    f"CREATE TRIGGER IF NOT EXISTS cv_episode_ins AFTER INSERT ON episode "
    f"BEGIN {_SQLITE_INSERT} END",
    "CREATE TRIGGER IF NOT EXISTS cv_episode_upd AFTER UPDATE OF episode_id, n_calls, last_ts "
    "ON episode WHEN OLD.episode_id IS NOT NEW.episode_id OR OLD.n_calls IS NOT NEW.n_calls "
    "OR OLD.last_ts IS NOT NEW.last_ts "
    f"BEGIN {_SQLITE_INSERT} END",
    f"CREATE TRIGGER IF NOT EXISTS cv_result_ins AFTER INSERT ON result BEGIN {_SQLITE_INSERT} END",
    f"CREATE TRIGGER IF NOT EXISTS cv_result_upd AFTER UPDATE ON result BEGIN {_SQLITE_INSERT} END",
)

POSTGRES_TRIGGERS: tuple[str, ...] = (
    f"CREATE SEQUENCE IF NOT EXISTS {QUEUE}_seq",
    f"""CREATE OR REPLACE FUNCTION cv_mark_dirty() RETURNS trigger AS $$
BEGIN
  INSERT INTO {QUEUE} (settings_hash, episode_id, seq)
  SELECT settings_hash, NEW.episode_id, nextval('{QUEUE}_seq') FROM {MARKS}
  ON CONFLICT (settings_hash, episode_id) DO UPDATE SET seq = excluded.seq;
  RETURN NULL;
END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS cv_episode_ins ON episode",
    "CREATE TRIGGER cv_episode_ins AFTER INSERT ON episode FOR EACH ROW "
    "EXECUTE FUNCTION cv_mark_dirty()",
    "DROP TRIGGER IF EXISTS cv_episode_upd ON episode",
    "CREATE TRIGGER cv_episode_upd AFTER UPDATE ON episode FOR EACH ROW "
    "WHEN (OLD.episode_id IS DISTINCT FROM NEW.episode_id OR OLD.n_calls IS DISTINCT FROM "
    "NEW.n_calls OR OLD.last_ts IS DISTINCT FROM NEW.last_ts) "
    "EXECUTE FUNCTION cv_mark_dirty()",
    "DROP TRIGGER IF EXISTS cv_result_ins ON result",
    "CREATE TRIGGER cv_result_ins AFTER INSERT OR UPDATE ON result FOR EACH ROW "
    "EXECUTE FUNCTION cv_mark_dirty()",
)

SEARCH_QUEUE = "search_pending"
"""Calls the full-text index has not read yet (`clawviz.store.search.index_pending`), filled by
a trigger on every call insert, so indexing never looks for unindexed calls by an anti-join."""

SQLITE_TRIGGERS += (
    f"CREATE TRIGGER IF NOT EXISTS cv_call_ins AFTER INSERT ON call "
    f"BEGIN INSERT OR IGNORE INTO {SEARCH_QUEUE} (call_id) VALUES (NEW.call_id); END",
)
POSTGRES_TRIGGERS += (
    f"""CREATE OR REPLACE FUNCTION cv_search_pending() RETURNS trigger AS $$
BEGIN
  INSERT INTO {SEARCH_QUEUE} (call_id) SELECT call_id FROM new_calls ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$ LANGUAGE plpgsql""",
    'DROP TRIGGER IF EXISTS cv_call_ins ON "call"',
    'CREATE TRIGGER cv_call_ins AFTER INSERT ON "call" REFERENCING NEW TABLE AS new_calls '
    "FOR EACH STATEMENT EXECUTE FUNCTION cv_search_pending()",
)

# The Runs aggregates (`clawviz.store.runstats`) also count what an episode is listed under and
# whether it is listed at all: a link to its wire episode, a changed task / harness / model, and
# a deleted episode are queued too (the analysis finds them unchanged, dequeues them and
# refreshes their counts; a deleted one's counts go).
_SQLITE_GONE = _SQLITE_INSERT.replace("NEW.episode_id", "OLD.episode_id")
SQLITE_TRIGGERS += (
    "CREATE TRIGGER IF NOT EXISTS cv_episode_listed AFTER UPDATE OF primary_episode, task_id, "
    "harness, model ON episode WHEN OLD.primary_episode IS NOT NEW.primary_episode OR "
    "OLD.task_id IS NOT NEW.task_id OR OLD.harness IS NOT NEW.harness OR "
    f"OLD.model IS NOT NEW.model BEGIN {_SQLITE_INSERT} END",
    f"CREATE TRIGGER IF NOT EXISTS cv_episode_del AFTER DELETE ON episode BEGIN {_SQLITE_GONE} END",
)
POSTGRES_TRIGGERS += (
    f"""CREATE OR REPLACE FUNCTION cv_mark_gone() RETURNS trigger AS $$
BEGIN
  INSERT INTO {QUEUE} (settings_hash, episode_id, seq)
  SELECT settings_hash, OLD.episode_id, nextval('{QUEUE}_seq') FROM {MARKS}
  ON CONFLICT (settings_hash, episode_id) DO UPDATE SET seq = excluded.seq;
  RETURN NULL;
END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS cv_episode_listed ON episode",
    "CREATE TRIGGER cv_episode_listed AFTER UPDATE ON episode FOR EACH ROW "
    "WHEN (OLD.primary_episode IS DISTINCT FROM NEW.primary_episode OR OLD.task_id IS DISTINCT "
    "FROM NEW.task_id OR OLD.harness IS DISTINCT FROM NEW.harness OR OLD.model IS DISTINCT FROM "
    "NEW.model) EXECUTE FUNCTION cv_mark_dirty()",
    "DROP TRIGGER IF EXISTS cv_episode_del ON episode",
    "CREATE TRIGGER cv_episode_del AFTER DELETE ON episode FOR EACH ROW "
    "EXECUTE FUNCTION cv_mark_gone()",
)
RUNS_TRIGGERS_SQLITE = SQLITE_TRIGGERS[-2:]
RUNS_TRIGGERS_POSTGRES = POSTGRES_TRIGGERS[-5:]
"""The two triggers above (migration 0011 adds them to older stores)."""
DROP_RUNS_SQLITE = (
    "DROP TRIGGER IF EXISTS cv_episode_listed",
    "DROP TRIGGER IF EXISTS cv_episode_del",
)
DROP_RUNS_POSTGRES = (
    "DROP TRIGGER IF EXISTS cv_episode_listed ON episode",
    "DROP TRIGGER IF EXISTS cv_episode_del ON episode",
    "DROP FUNCTION IF EXISTS cv_mark_gone()",
)

DROP_SQLITE: tuple[str, ...] = tuple(
    f"DROP TRIGGER IF EXISTS {name}"
    for name in (
        "cv_episode_ins",
        "cv_episode_upd",
        "cv_result_ins",
        "cv_result_upd",
        "cv_call_ins",
        "cv_episode_listed",
        "cv_episode_del",
    )
)
DROP_POSTGRES: tuple[str, ...] = (
    "DROP TRIGGER IF EXISTS cv_episode_ins ON episode",
    "DROP TRIGGER IF EXISTS cv_episode_upd ON episode",
    "DROP TRIGGER IF EXISTS cv_result_ins ON result",
    'DROP TRIGGER IF EXISTS cv_call_ins ON "call"',
    *DROP_RUNS_POSTGRES,
    "DROP FUNCTION IF EXISTS cv_mark_dirty()",
    "DROP FUNCTION IF EXISTS cv_search_pending()",
    f"DROP SEQUENCE IF EXISTS {QUEUE}_seq",
)


# --- the attempts revision (the Tasks queue's cache key; issue 26 §3) -------------------------
ATTEMPTS = "attempts_change"
"""A counter of committed changes to what the Tasks queue summarises: every result's task, role
and reward columns, and every episode's id, task and role. The queue's per-task attempt summary
(`clawviz.review.tasks.attempt_summary`) is a pass over every attempt; the app caches it under
`attempts_revision` and recomputes it only when that changes, whatever process wrote.

The revision is the sum of `n` over the rows: it only ever grows, by at least one at each
commit that changed an attempt. SQLite serialises its writers, so one row (id 0) counts the
changed rows. On PostgreSQL one counter row would be a lock that every concurrent ingest waits
on until its commit, so each writing transaction adds its own row (id = its transaction id,
n = 1, once however much it writes): nothing is shared between writers. Those rows are folded
into row 0 by `compact_attempts` (the end of each ingest), which keeps the sum, so the table
stays small and the revision is still never an earlier one."""

_RESULT_COLUMNS = ("episode_id", "task_id", "model_role", "reward", "checks_json", "rubric_json")
_EPISODE_COLUMNS = ("episode_id", "task_id", "model_role")


def _changed(columns: tuple[str, ...], differ: str) -> str:
    """A trigger's WHEN over the columns: some value differs (`differ`: IS NOT on SQLite, IS
    DISTINCT FROM on PostgreSQL). Ingest rewrites every column of an episode it adds calls to,
    so a plain `UPDATE OF` would count each of those updates."""
    return " OR ".join(f"OLD.{c} {differ} NEW.{c}" for c in columns)


_SQLITE_BUMP = (
    f"INSERT INTO {ATTEMPTS} (id, n) VALUES (0, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1;"
)
_SQLITE_ATTEMPT_EVENTS: dict[str, str] = {
    f"cv_attempts_{table}_{kind}": event
    for table, columns in (("result", _RESULT_COLUMNS), ("episode", _EPISODE_COLUMNS))
    for kind, event in (
        ("ins", f"INSERT ON {table}"),
        (
            "upd",
            f"UPDATE OF {', '.join(columns)} ON {table} WHEN {_changed(columns, 'IS NOT')}",
        ),
        ("del", f"DELETE ON {table}"),
    )
}
ATTEMPTS_TRIGGERS_SQLITE: tuple[str, ...] = tuple(
    f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} BEGIN {_SQLITE_BUMP} END"
    for name, event in _SQLITE_ATTEMPT_EVENTS.items()
)
# DO NOTHING, not a count: the row says "this transaction changed attempts", and updating one
# row at every statement of a transaction would leave it a chain of versions that each later
# update walks (an executemany of 50,000 result inserts took 19 s of server time that way).
_PG_BUMP = f"INSERT INTO {ATTEMPTS} (id, n) VALUES (txid_current(), 1) ON CONFLICT (id) DO NOTHING;"
ATTEMPTS_TRIGGERS_POSTGRES: tuple[str, ...] = (
    f"""CREATE OR REPLACE FUNCTION cv_attempts_bump() RETURNS trigger AS $$
BEGIN
  {_PG_BUMP}
  RETURN NULL;
END $$ LANGUAGE plpgsql""",
    *(
        sql
        for table, columns in (("result", _RESULT_COLUMNS), ("episode", _EPISODE_COLUMNS))
        for sql in (
            f"DROP TRIGGER IF EXISTS cv_attempts_{table} ON {table}",
            f"CREATE TRIGGER cv_attempts_{table} AFTER INSERT OR DELETE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION cv_attempts_bump()",
            f"DROP TRIGGER IF EXISTS cv_attempts_{table}_upd ON {table}",
            f"CREATE TRIGGER cv_attempts_{table}_upd AFTER UPDATE OF {', '.join(columns)} "
            f"ON {table} FOR EACH ROW WHEN ({_changed(columns, 'IS DISTINCT FROM')}) "
            "EXECUTE FUNCTION cv_attempts_bump()",
        )
    ),
)
"""Inserts and deletes count once per statement, however many rows it writes (a statement that
writes none still counts: a needless recompute, never a stale queue). Updates count per row
whose attempt columns really change, so ingest's rewrite of an episode's row costs nothing."""
DROP_ATTEMPTS_SQLITE: tuple[str, ...] = tuple(
    f"DROP TRIGGER IF EXISTS {name}" for name in _SQLITE_ATTEMPT_EVENTS
)
DROP_ATTEMPTS_POSTGRES: tuple[str, ...] = (
    *(sql for sql in ATTEMPTS_TRIGGERS_POSTGRES if sql.startswith("DROP TRIGGER")),
    "DROP FUNCTION IF EXISTS cv_attempts_bump()",
)


def trigger_ddl(dialect: str, *, attempts: bool = True) -> tuple[str, ...]:
    """The statements that create the triggers on this backend (idempotent). `attempts=False`:
    without the attempts revision's (migration 0009 runs before its table exists)."""
    if dialect == "postgresql":
        return POSTGRES_TRIGGERS + (ATTEMPTS_TRIGGERS_POSTGRES if attempts else ())
    return SQLITE_TRIGGERS + (ATTEMPTS_TRIGGERS_SQLITE if attempts else ())


def attempts_revision(conn: Any) -> int:
    """The attempts revision (`ATTEMPTS`): it grows at every committed change of a result's or
    an episode's attempt columns. Read it before the data it keys, so that a change committed
    in between makes the next read differ (never a stale summary cached under a new revision)."""
    from sqlalchemy import text

    return int(conn.execute(text(f"SELECT COALESCE(SUM(n), 0) FROM {ATTEMPTS}")).scalar_one())


COMPACT_ATTEMPTS_POSTGRES = f"""
    WITH gone AS (DELETE FROM {ATTEMPTS} WHERE id <> 0 RETURNING n)
    INSERT INTO {ATTEMPTS} (id, n)
    SELECT 0, SUM(n) FROM gone HAVING COUNT(*) > 0
    ON CONFLICT (id) DO UPDATE SET n = {ATTEMPTS}.n + EXCLUDED.n
"""
"""One statement, so one snapshot: the rows it deletes are the rows it adds to row 0. A row of
a transaction still open is not visible to it and stays, to count when that one commits; a
second compaction at the same time waits on row 0 and finds the rows gone."""


def compact_attempts(conn: Any) -> int:
    """Fold PostgreSQL's per-transaction rows into row 0, keeping the revision (SQLite has only
    row 0). Returns the rows folded. Commit it on its own: it writes no result or episode."""
    from sqlalchemy import text

    if conn.dialect.name != "postgresql":
        return 0
    before = conn.execute(text(f"SELECT COUNT(*) FROM {ATTEMPTS} WHERE id <> 0")).scalar_one()
    if not before:
        return 0
    conn.execute(text(COMPACT_ATTEMPTS_POSTGRES))
    return int(before)
