"""Fresh stores for tests, on SQLite (default) or on the PostgreSQL server the suite was given.

`CLAWVIZ_TEST_DATABASE_URL` (or `pytest --db-url URL`) names a PostgreSQL maintenance database
(`postgresql+psycopg://user@127.0.0.1:PORT/postgres`); each fresh store is then a new database
on that server. Without it every store is a SQLite file (or an in-memory database).
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool, StaticPool

ENV = "CLAWVIZ_TEST_DATABASE_URL"


def server_url() -> str | None:
    """The PostgreSQL server under test, or None for SQLite."""
    return os.environ.get(ENV) or None


def on_postgres() -> bool:
    return server_url() is not None


def _new_pg_database(name: str) -> str:
    base = make_url(server_url())
    db = re.sub(r"[^a-z0-9_]", "_", f"t_{name.lower()}_{uuid.uuid4().hex[:10]}")[:60]
    admin = create_engine(base, isolation_level="AUTOCOMMIT", poolclass=StaticPool)
    try:
        with admin.connect() as con:
            con.execute(text(f'CREATE DATABASE "{db}"'))
    finally:
        admin.dispose()
    return base.set(database=db).render_as_string(hide_password=False)


def fresh_url(folder: Path | str | None = None, name: str = "store") -> str:
    """The URL of a new, empty store: a SQLite file in `folder` (memory without one) or a new
    PostgreSQL database."""
    if on_postgres():
        return _new_pg_database(name)
    if folder is None:
        return "sqlite://"
    return f"sqlite:///{Path(folder) / f'{name}.db'}"


def memory_engine(name: str = "mem"):
    """An engine on a fresh store: in-memory SQLite shared by every session, or a new database."""
    if on_postgres():
        # No pool: a session-long fixture's engine (one per recording) holds no idle server
        # connection between its uses, so the suite stays under the server's max_connections.
        return create_engine(fresh_url(name=name), poolclass=NullPool)
    return create_engine(
        "sqlite://", connect_args={"check_same_thread": False}, poolclass=StaticPool
    )


def query(url: str, sql: str, **params) -> list[tuple]:
    """Rows of one read-only SQL statement on the store at `url` (either backend)."""
    engine = create_engine(url)
    try:
        with engine.connect() as con:
            return [tuple(r) for r in con.execute(text(sql), params)]
    finally:
        engine.dispose()
