"""Schema migrations (Alembic). `versions/` holds one revision per schema change, from `0001`
(the v1 schema of stores made before migrations existed) on.

`upgrade(engine)` brings a store to the newest revision; `current(engine)` and `HEAD` say where
it stands. A new store is created from the models and stamped at HEAD. `clawviz migrate` runs
`upgrade`; opening an older store otherwise stops with a message naming that command.
"""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

_DIR = Path(__file__).parent


def _script() -> ScriptDirectory:
    cfg = Config()
    cfg.set_main_option("script_location", str(_DIR))
    return ScriptDirectory.from_config(cfg)


HEAD: str = _script().get_current_head() or ""


def current(conn: Connection) -> str | None:
    """The store's revision (None: not stamped, i.e. a v1 store or an empty database)."""
    return MigrationContext.configure(conn).get_current_revision()


def _run(conn: Connection, fn) -> None:
    script = _script()
    cfg = script.config if hasattr(script, "config") else Config()
    with EnvironmentContext(cfg, script, fn=lambda rev, ctx: fn(script, rev)) as env:
        env.configure(connection=conn, target_metadata=SQLModel.metadata)
        with env.begin_transaction():
            env.run_migrations()


def upgrade(conn: Connection, *, from_v1: bool = False) -> list[str]:
    """Apply every revision after the store's own; returns the revisions applied.

    `from_v1`: the store predates migrations (tables exist, no revision): start after 0001."""
    start = current(conn) or ("0001" if from_v1 else None)
    if start is not None and current(conn) is None:
        stamp(conn, start)
    applied = [s.revision for s in _script().iterate_revisions(HEAD, start) if s.revision != start][
        ::-1
    ]
    if applied:
        _run(conn, lambda script, rev: script._upgrade_revs(HEAD, rev))
    return applied


def stamp(conn: Connection, revision: str = HEAD) -> None:
    """Record `revision` as the store's own without running anything."""
    _run(conn, lambda script, rev: script._stamp_revs(revision, rev))
