"""Engine and session helpers. SQLite by default; creation is idempotent."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, SQLModel, create_engine, select

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import models

_ENGINES: dict[str, Engine] = {}


def get_engine(url: str | None = None) -> Engine:
    """Return a cached engine for `url` (default: the settings table's database URL)."""
    url = url or DEFAULT_SETTINGS.resolved_database_url
    if url in _ENGINES:
        return _ENGINES[url]
    kwargs: dict = {}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        if url in ("sqlite://", "sqlite:///:memory:"):
            kwargs["poolclass"] = StaticPool
        else:
            path = url.split("sqlite:///", 1)[-1]
            if path:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **kwargs)
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    init_db(engine)
    _ENGINES[url] = engine
    return engine


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    # Takes effect only when the file is created (before WAL is set): rows of compressed
    # message and response text are kilobytes, and 4 KB pages would leave a third unused.
    cur.execute("PRAGMA page_size=16384")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def init_db(engine: Engine) -> None:
    """Create missing tables and record / migrate the schema version."""
    SQLModel.metadata.create_all(engine)
    with Session(engine) as s:
        row = s.get(models.Meta, "schema_version")
        if row is None:
            s.add(models.Meta(key="schema_version", value=str(models.SCHEMA_VERSION)))
            s.commit()
        elif int(row.value) < models.SCHEMA_VERSION:
            migrate(s, int(row.value))


def migrate(session: Session, from_version: int) -> None:
    """Bring an older store up to SCHEMA_VERSION, one step at a time."""
    version = from_version
    # Each future step: `if version == N: ...; version = N + 1`.
    if version == 1:
        # decision.match_ignored (what tree matching ignored per call); decisions are
        # recomputed anyway (ANALYSIS_VERSION changed with it).
        session.execute(
            text("ALTER TABLE decision ADD COLUMN match_ignored VARCHAR NOT NULL DEFAULT '[]'")
        )
        version = 2
    row = session.get(models.Meta, "schema_version")
    assert row is not None
    row.value = str(max(version, models.SCHEMA_VERSION))
    session.add(row)
    session.commit()


def schema_version(engine: Engine) -> int:
    with Session(engine) as s:
        row = s.exec(select(models.Meta).where(models.Meta.key == "schema_version")).first()
        return int(row.value) if row else 0


@contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    with Session(get_engine(url)) as s:
        yield s
