"""Read-only answers straight from a SQLite store file, for the command line's fast start.

Ingest stores the decisions, so `clawviz episodes` usually only has to read. Importing the ORM
(SQLModel, SQLAlchemy, pydantic) costs several times more than that read, so when the store is
a SQLite file whose decisions are current under the given settings, the rows are read here with
the standard library's `sqlite3`. Anything else (another database, a stale or missing analysis,
an unreadable file) returns None and the caller takes the full path, which analyses first.

The staleness check is the SQL of `clawviz.store.decisions.stale_episodes` written as text;
tests/test_fastread.py checks both agree on fresh and stale stores.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from clawviz.settings import Settings

ANALYSIS_VERSION = 4
"""Bump when reconstruction logic changes: stored decisions of older versions are recomputed."""

UNATTACHED = ""
"""DecisionRow.episode_id of calls no episode could be determined for (pipeline.UNATTACHED)."""


def settings_json_parts(settings: Settings) -> tuple[str, str]:
    """`settings_json` is prefix + inputs stamp + suffix (the JSON of settings and stamp)."""
    marker = "\x00"
    whole = orjson.dumps({"settings": settings.decision_values(), "inputs": marker}).decode()
    prefix, _, suffix = whole.partition(orjson.dumps(marker).decode()[1:-1])
    return prefix, suffix


NUL_PREFIX = "\ufdd0nul:"
"""`models.NUL_PREFIX` (a test keeps them equal): texts that start with it are JSON-encoded."""


def restore_nul(value: Any) -> Any:
    """`models.restore_nul` without importing the ORM: a raw-SQL text as it was written."""
    if isinstance(value, str) and value.startswith(NUL_PREFIX):
        return json.loads(value[len(NUL_PREFIX) :])
    return value


def _text(col: str) -> str:
    return f"coalesce(CAST({col} AS VARCHAR), '')"


_STAMP = " || '|' || ".join(
    [
        f"'v{ANALYSIS_VERSION}'",
        _text("e.n_calls"),
        _text("e.last_ts"),
        "CASE WHEN r.id IS NULL THEN 'none' ELSE 'result' END",
        _text("r.reward"),
        _text("length(r.checks_json)"),
        _text("length(r.rubric_json)"),
    ]
)
"""`decisions._inputs_stamp()` as SQLite text."""

_N_STALE = f"""
SELECT count(*) FROM episode AS e
LEFT OUTER JOIN result AS r ON r.episode_id = e.episode_id
LEFT OUTER JOIN episode_status AS st
  ON st.episode_id = e.episode_id AND st.settings_hash = :h
WHERE st.episode_id IS NULL OR st.settings_json != (:prefix || {_STAMP} || :suffix)
"""

_N_STALE_QUEUED = f"""
SELECT count(*) FROM episode_dirty AS d
JOIN episode AS e ON e.episode_id = d.episode_id
LEFT OUTER JOIN result AS r ON r.episode_id = e.episode_id
LEFT OUTER JOIN episode_status AS st
  ON st.episode_id = e.episode_id AND st.settings_hash = :h
WHERE d.settings_hash = :h
  AND (st.episode_id IS NULL OR st.settings_json != (:prefix || {_STAMP} || :suffix))
"""
"""`_N_STALE` over the change queue only (`clawviz.store.changes`): O(changed episodes)."""

_REGISTERED = "SELECT analysis_version FROM analysis_mark WHERE settings_hash = :h"

_UNATTACHED = """
SELECT (SELECT count(*) FROM call WHERE episode_id IS NULL),
       (SELECT count(*) FROM decision WHERE settings_hash = :h AND episode_id = :u)
"""

_ROWS = """
SELECT e.episode_id, e.task_id, e.harness, e.model, e.attempt, e.n_calls, r.reward,
       st.status, st.reasons_json
FROM episode AS e
LEFT OUTER JOIN result AS r ON r.episode_id = e.episode_id
LEFT OUTER JOIN episode_status AS st
  ON st.episode_id = e.episode_id AND st.settings_hash = :h
ORDER BY e.task_id, e.harness, e.attempt, e.episode_id
"""


_VERSIONS = Path(__file__).parent / "migrations" / "versions"
_REVISION = re.compile(r"^(down_revision|revision)\s*=\s*['\"]?([^'\"\s]*)", re.M)


@cache
def head_revision() -> str | None:
    """`migrations.HEAD` read from the revision files, without importing Alembic: the one
    revision no other names as its `down_revision` (None when that is not a single one)."""
    revisions, downs = set(), set()
    for path in _VERSIONS.glob("*.py"):
        found = dict(_REVISION.findall(path.read_text(encoding="utf-8")))
        if found.get("revision"):
            revisions.add(found["revision"])
            downs.add(found.get("down_revision"))
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 else None


def sqlite_path(url: str) -> Path | None:
    """The file of a `sqlite:///...` URL (None for memory databases and other engines)."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :].split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    return Path(path)


def _connect(url: str) -> sqlite3.Connection | None:
    path = sqlite_path(url)
    if path is None or not path.is_file():
        return None
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        return None


def n_stale(con: sqlite3.Connection, settings: Settings) -> int:
    """Episodes (plus 1 for unanalysed unattached calls) `ensure_analysis` would recompute."""
    prefix, suffix = settings_json_parts(settings)
    h = settings.settings_hash
    try:
        mark = con.execute(_REGISTERED, {"h": h}).fetchone()
    except sqlite3.Error:  # a store made before the change queue
        mark = None
    sql = _N_STALE_QUEUED if mark is not None and mark[0] == ANALYSIS_VERSION else _N_STALE
    (stale,) = con.execute(sql, {"h": h, "prefix": prefix, "suffix": suffix}).fetchone()
    calls, done = con.execute(_UNATTACHED, {"h": h, "u": UNATTACHED}).fetchone()
    return stale + (calls != done)


CHUNK = 2000
"""Rows read, parsed and handed out together by `iter_episode_rows` (memory stays at a chunk)."""


def episode_rows(url: str, settings: Settings) -> list[dict[str, Any]] | None:
    """`clawviz episodes` rows read directly, or None when the full path is needed."""
    rows = iter_episode_rows(url, settings)
    return None if rows is None else list(rows)


def iter_episode_rows(url: str, settings: Settings) -> Iterator[dict[str, Any]] | None:
    """`episode_rows` as a generator reading `CHUNK` rows at a time (constant memory at any
    number of episodes), or None when the full path is needed. The checks run before it
    returns; the rows are read as the generator is consumed."""
    con = _connect(url)
    if con is None:
        return None
    try:
        # A store behind the newest schema takes the full path, which says to migrate it.
        (revision,) = con.execute("SELECT version_num FROM alembic_version").fetchone()
        if revision is None or revision != head_revision() or n_stale(con, settings):
            con.close()
            return None
        cursor = con.execute(_ROWS, {"h": settings.settings_hash})
    except sqlite3.Error:
        con.close()
        return None
    return _rows_of(con, cursor)


def _rows_of(con: sqlite3.Connection, cursor: sqlite3.Cursor) -> Iterator[dict[str, Any]]:
    try:
        while rows := cursor.fetchmany(CHUNK):
            yield from _chunk_rows(con, rows)
    finally:
        con.close()


def _chunk_rows(con: sqlite3.Connection, rows: list[tuple]) -> list[dict[str, Any]]:
    parsed = [orjson.loads(restore_nul(row[-1])) if row[-1] else [] for row in rows]
    lines = _lines_of(con, {r["call_id"] for rs in parsed for r in rs if r.get("call_id")})
    out = []
    for (eid, task, harness, model, attempt, n_calls, reward, status, _), items in zip(
        rows, parsed, strict=True
    ):
        reasons = [r.get("code") for r in items]
        out.append(
            {
                "episode_id": restore_nul(eid),
                "task_id": restore_nul(task),
                "harness": restore_nul(harness),
                "model": restore_nul(model),
                "attempt": attempt,
                "n_calls": n_calls,
                "reward": reward,
                "status": restore_nul(status) or "unknown",
                "reasons": reasons,
                "reasons_at": [lines.get(r.get("call_id")) for r in items],
            }
        )
    return out


def _lines_of(con: sqlite3.Connection, call_ids: set[str]) -> dict[str, str]:
    """`call_label` (the log line, as text) of the calls episode reasons are pinned on."""
    ids = sorted(call_ids)
    out: dict[str, str] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT call_id, line FROM call WHERE call_id IN ({marks})"  # noqa: S608
        out.update({restore_nul(c): str(line) for c, line in con.execute(sql, chunk)})
    return out
