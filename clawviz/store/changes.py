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


def trigger_ddl(dialect: str) -> tuple[str, ...]:
    """The statements that create the triggers on this backend (idempotent)."""
    return POSTGRES_TRIGGERS if dialect == "postgresql" else SQLITE_TRIGGERS
